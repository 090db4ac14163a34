"""Broker-side message filters handed to the store on pull (tag hash now; SQL92 is a later issue)."""

from rocketq.broker.filter.expression import TagMessageFilter, build_tag_filter, is_tag_type

__all__ = ["TagMessageFilter", "build_tag_filter", "is_tag_type"]
