"""rocketq.spark"""
