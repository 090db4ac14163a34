"""fastjson-compatible JSON for request and response bodies: rocketq.common.fastjson, which the store
also uses for its own files (delayOffset.json), under the name the body codecs import it by."""

from rocketq.common.fastjson import ObjectKey, dumps, loads, object_key_items

__all__ = ["ObjectKey", "dumps", "loads", "object_key_items"]
