"""rocketq.namesrv.processors"""
