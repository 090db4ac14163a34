'use strict';
// Shared by produce.js and consume.js: the client options for an open-source NameServer, a logger
// that keeps stdout for the JSON lines the Python test reads, and the line writer.

const fs = require('fs');
const util = require('util');

// ali-ons logs through options.logger; everything goes to stderr (the test shows it on failure).
const logger = {};
for (const level of [ 'debug', 'info', 'warn', 'error' ]) {
  logger[level] = (...args) => process.stderr.write(`[${level}] ${util.format(...args)}\n`);
}

// A name-server address (`host:port`) replaces the Aliyun HTTP address service; the HTTP client is then
// never called but must be given. The keys are dummies: ali-ons signs every request with them (extra
// extFields AccessKey, Signature, OnsChannel), which an open-source broker ignores.
function clientOptions(spec) {
  return {
    logger,
    nameSrv: spec.namesrv,
    httpclient: {},
    accessKeyId: 'compat-test-key',
    accessKeySecret: 'compat-test-secret',
    // Short periods so that route changes, rebalances and offset commits happen within a test.
    pollNameServerInteval: 2000,
    heartbeatBrokerInterval: 2000,
    rebalanceInterval: 2000,
    persistConsumerOffsetInterval: 1000,
    // An Aliyun instance namespace: topics and groups go on the wire as `<namespace>%<name>`.
    namespace: spec.namespace || '',
  };
}

function emit(event) {
  process.stdout.write(JSON.stringify(event) + '\n');
}

function spec() {
  if (process.argv.length < 3) {
    throw new Error('usage: node script.js <JSON spec> | @<file with the JSON spec>');
  }
  const arg = process.argv[2];
  // `@path`: the spec is in that file (a long message list does not fit in one argument).
  return JSON.parse(arg.startsWith('@') ? fs.readFileSync(arg.slice(1), 'utf8') : arg);
}

function messageToJson(msg) {
  return {
    msgId: msg.msgId,
    topic: msg.topic,
    flag: msg.flag,
    tags: msg.tags,
    keys: msg.keys,
    body: msg.body ? msg.body.toString('base64') : '',
    properties: msg.properties,
    queueId: msg.queueId,
    queueOffset: msg.queueOffset,
    reconsumeTimes: msg.reconsumeTimes,
    bornTimestamp: msg.bornTimestamp,
    storeTimestamp: msg.storeTimestamp,
  };
}

module.exports = { clientOptions, emit, spec, messageToJson, logger };
