"""The NameServer's route tables, one module per table; RouteInfoManager (../route_info.py) joins them."""
