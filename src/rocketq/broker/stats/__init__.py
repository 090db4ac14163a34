"""Broker statistics: counters on the send/pull paths, published as JSON to the broker's stats topics.

counters.py counts (BrokerStatsManager, held as BrokerContext.stats), records.py turns a closed window
into JSON records, publisher.py (BrokerStatsService) writes them every statsInterval. Schema and topic
names: docs/stats-topics.md.
"""
