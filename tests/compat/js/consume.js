'use strict';
// Runs an ali-ons push Consumer described by a JSON spec and prints one JSON line per delivery:
//   node consume.js '{"namesrv": "127.0.0.1:9876", "group": "cg", "topic": "T", "expression": "A || B",
//                     "broadcast": false, "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
//                     "retryFirstDeliveryOfTags": ["R"], "retryAlwaysTags": ["D"], "namespace": "ns1",
//                     "options": {"maxReconsumeTimes": 1}}'
// ("expression" may also be {"expressionType": "SQL92", "subString": "a > 1"}.)
// Lines: {"event": "ready"} once started; {"event": "message", ...message fields, "action"} per delivery
// ("action" is "retry" when the handler asked for ACTION_RETRY, else "ok"); {"event": "error", "message"}
// for each error the consumer reports. A line "close" on stdin (or its end) closes the consumer, which
// commits its offsets to the broker, then {"event": "closed"} is printed and the process exits.

const readline = require('readline');
const { Consumer } = require('ali-ons');
const { clientOptions, emit, spec, messageToJson } = require('./common');

async function main() {
  const s = spec();
  const options = Object.assign(clientOptions(s), {
    consumerGroup: s.group,
    isBroadcast: !!s.broadcast,
    consumeFromWhere: s.consumeFromWhere || 'CONSUME_FROM_FIRST_OFFSET',
    brokerSuspendMaxTimeMillis: 2000,
    consumerTimeoutMillisWhenSuspend: 5000,
  });
  if (s.instanceName) {
    options.instanceName = s.instanceName;
  }
  // Any other ali-ons consumer option (maxReconsumeTimes, postSubscriptionWhenPull, pullBatchSize, ...).
  Object.assign(options, s.options || {});
  if (s.consumeTimestamp) {
    options.consumeTimestamp = s.consumeTimestamp;
  }
  const retryTags = new Set(s.retryFirstDeliveryOfTags || []);
  const alwaysRetryTags = new Set(s.retryAlwaysTags || []);
  const consumer = new Consumer(options);
  consumer.on('error', err => emit({ event: 'error', message: String(err && err.stack || err) }));

  let closing = null;
  const close = () => {
    if (!closing) {
      closing = consumer.close().then(() => {
        emit({ event: 'closed' });
        process.exit(0);
      }, err => {
        emit({ event: 'fatal', message: String(err && err.stack || err) });
        process.exit(1);
      });
    }
    return closing;
  };
  readline.createInterface({ input: process.stdin }).on('line', line => {
    if (line.trim() === 'close') {
      close();
    }
  }).on('close', close);

  consumer.subscribe(s.topic, s.expression || '*', async msg => {
    // The first delivery of a retryFirstDeliveryOfTags message asks for a retry with ACTION_RETRY. A
    // retryAlwaysTags message throws instead: ali-ons drops the handler's return value for messages
    // coming from the %RETRY% topic (its retry-topic wrapper does not pass it on), a throw does count.
    const always = alwaysRetryTags.has(msg.tags);
    const retry = always || (retryTags.has(msg.tags) && msg.reconsumeTimes === 0);
    emit(Object.assign({ event: 'message', action: retry ? 'retry' : 'ok' }, messageToJson(msg)));
    if (always) {
      throw new Error(`test handler fails ${msg.msgId} on purpose`);
    }
    return retry ? Consumer.ACTION_RETRY : undefined;
  });
  await consumer.ready();
  emit({ event: 'ready' });
}

main().catch(err => {
  emit({ event: 'fatal', message: String(err && err.stack || err) });
  process.exit(1);
});
