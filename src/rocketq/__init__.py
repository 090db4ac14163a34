"""rocketq: a RocketMQ-compatible message broker cluster and asyncio client SDK in pure Python.

This module holds the version only and imports no subpackage, so `import rocketq` stays cheap.
"""

__version__ = "0.1.0"
