"""Admin request families (AdminBrokerProcessor split by concern)."""
