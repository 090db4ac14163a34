"""rocketq.namesrv"""
