"""rocketq.client"""
