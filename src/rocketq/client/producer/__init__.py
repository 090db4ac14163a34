"""rocketq.client.producer"""
