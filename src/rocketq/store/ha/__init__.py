"""Master/slave replication of the commit log (RocketMQ 4.x HAService): codec.py is the wire format
(sans-IO), master.py the master's side (HAService, HAConnection, GroupTransferService), slave.py the
slave's (HAClient)."""
