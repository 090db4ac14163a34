"""Spark: read a topic with format("rocketq"), as a batch and as a stream resumed from its checkpoint.

Needs the `spark` extra (pip install 'rocketq[spark]') and Java 17+. Run it with the venv's python
(Spark's workers use $PYSPARK_PYTHON, set below to this interpreter).
"""

import os
import sys
import tempfile

from _common import namesrv_addr

from rocketq.client.blocking import Admin, Message, Producer

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

from pyspark.sql import SparkSession  # after PYSPARK_PYTHON is set
from pyspark.sql import functions as F

TOPIC = "ExampleSparkTopic"


def send(ns: str, first: int, count: int) -> None:
    with Producer("example_spark_producer", namesrv_addr=ns) as producer:
        for i in range(first, first + count):
            producer.send(Message(TOPIC, f"order {i}".encode(), tags="even" if i % 2 == 0 else "odd", keys=f"o{i}"))


def main(ns: str) -> None:
    with Admin(namesrv_addr=ns) as admin:  # created up front, so the NameServer routes it before Spark asks
        admin.create_topic(TOPIC, read_queues=4, write_queues=4)
    send(ns, 0, 20)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocketq-example")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # Batch: everything the topic holds now (startingOffsets=earliest, endingOffsets=latest).
    df = spark.read.format("rocketq").option("namesrv", ns).option("topic", TOPIC).load()
    df.groupBy("tags").count().orderBy("tags").show()
    print(f"batch read {df.count()} messages")

    # Streaming: offsets per queue in the checkpoint; the second run reads only what came after the first.
    with tempfile.TemporaryDirectory() as work:
        stream = spark.readStream.format("rocketq").option("namesrv", ns).option("topic", TOPIC).load()
        bodies = stream.select("queue_id", "queue_offset", F.col("body").cast("string").alias("body"))

        def run() -> int:
            query = (
                bodies.writeStream.format("parquet")
                .option("path", f"{work}/out")
                .option("checkpointLocation", f"{work}/checkpoint")
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            return sum(p["numInputRows"] for p in query.recentProgress)

        first = run()
        send(ns, 20, 5)
        second = run()
        out = spark.read.parquet(f"{work}/out")
        total, distinct = out.count(), out.select("queue_id", "queue_offset").distinct().count()
        print(f"stream read {first} then {second} messages; output: {total} rows, {distinct} distinct")
    spark.stop()


if __name__ == "__main__":
    main(namesrv_addr(__doc__))
