"""A Spark driver streaming a rocketq topic into parquet until it is killed (run as a subprocess by the tests).

python spark_stream_driver.py NAMESRV TOPIC CHECKPOINT_DIR OUT_DIR MAX_MESSAGES_PER_TRIGGER
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def main(namesrv: str, topic: str, checkpoint: str, out: str, per_trigger: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocketq-stream-driver")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        .getOrCreate()
    )
    stream = (
        spark.readStream.format("rocketq")
        .option("namesrv", namesrv)
        .option("topic", topic)
        .option("maxMessagesPerTrigger", per_trigger)
        .load()
    )
    query = (
        stream.select("topic", "broker_name", "queue_id", "queue_offset", "msg_id", "body")
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    print("STARTED", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:6])
