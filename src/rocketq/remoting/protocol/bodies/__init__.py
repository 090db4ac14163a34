"""rocketq.remoting.protocol.bodies"""
