"""rocketq.testing"""
