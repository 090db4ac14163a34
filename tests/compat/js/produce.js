'use strict';
// Sends the messages of a JSON spec with an ali-ons Producer and prints one JSON line per send result:
//   node produce.js '{"namesrv": "127.0.0.1:9876", "group": "pg", "messages": [
//       {"topic": "T", "tags": "A", "keys": ["k1"], "body": "<base64>", "properties": {"a": "1"},
//        "flag": 3, "delayTimeLevel": 2, "startDeliverAfterMs": 3000, "shardingKey": "order-7"}],
//       "namespace": "ns1"}'
// Lines: {"event": "sent", "index": i, "sendStatus", "msgId", "queueId", "queueOffset", "brokerName"} or
// {"event": "error", "index": i, "message"}; then {"event": "done"} after the producer closed.

const { Producer, Message } = require('ali-ons');
const { clientOptions, emit, spec } = require('./common');

async function main() {
  const s = spec();
  const producer = new Producer(Object.assign(clientOptions(s), { producerGroup: s.group }));
  producer.on('error', err => process.stderr.write(`producer error: ${err.stack}\n`));
  await producer.ready();
  emit({ event: 'ready' });
  let failed = 0;
  for (let index = 0; index < s.messages.length; index++) {
    const m = s.messages[index];
    const msg = new Message(m.topic, m.tags, Buffer.from(m.body, 'base64'));
    if (m.keys) {
      msg.keys = m.keys;
    }
    for (const [ name, value ] of Object.entries(m.properties || {})) {
      msg.properties[name] = value;
    }
    if (m.flag) {
      msg.flag = m.flag;
    }
    if (m.delayTimeLevel) {
      msg.delayTimeLevel = m.delayTimeLevel;
    }
    if (m.startDeliverAfterMs) {
      msg.setStartDeliverTime(Date.now() + m.startDeliverAfterMs);
    }
    if (m.shardingKey) {
      msg.shardingKey = m.shardingKey;
    }
    try {
      const r = await producer.send(msg);
      emit({
        event: 'sent', index, sendStatus: r.sendStatus, msgId: r.msgId, queueId: r.messageQueue.queueId,
        brokerName: r.messageQueue.brokerName, queueOffset: r.queueOffset,
      });
    } catch (err) {
      failed++;
      emit({ event: 'error', index, message: String(err && err.stack || err) });
    }
  }
  await producer.close();
  emit({ event: 'done', failed });
}

main().then(() => process.exit(0), err => {
  emit({ event: 'fatal', message: String(err && err.stack || err) });
  process.exit(1);
});
