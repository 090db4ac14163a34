"""rocketq.client.consumer"""
