"""The client instance's own producer (group CLIENT_INNER_PRODUCER), which consumers re-send through.

Java's MQClientInstance builds this producer itself (its defaultMQProducer), so instance and producer
know each other. Here the producer package makes it over a given instance and the instance only sees
it as one of its registered producers: the instance never imports the producer, and the dependency
between the two stays one way (producer -> instance).
"""

from __future__ import annotations

from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.instance import ClientInstance
from rocketq.client.producer.producer import Producer
from rocketq.common import constants as C


async def inner_producer(instance: ClientInstance) -> Producer:
    """The instance's CLIENT_INNER_PRODUCER producer, started on first use with the instance's settings.

    It lives as long as the instance (which drops it on shutdown) and does not keep the instance alive.
    """
    existing = instance.producers.get(C.CLIENT_INNER_PRODUCER_GROUP)
    if isinstance(existing, Producer):
        return existing
    shared = {k: v for k, v in instance.config.model_dump().items() if k in ClientConfig.model_fields}
    producer = Producer(C.CLIENT_INNER_PRODUCER_GROUP, config=ProducerConfig.build(shared), instance=instance)
    await producer.start()
    return producer
