"""rocketq.broker.processors"""
