package rocketq.compat;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RPCHook;

/** DefaultMQProducer (sync, async, oneway, batch, by queue selector) and TransactionMQProducer. */
final class Producers {
    private Producers() {
    }

    private static void configure(DefaultMQProducer p, JSONObject cmd) {
        p.setNamesrvAddr(cmd.getString("namesrv"));
        p.setInstanceName(Driver.instanceName(p.getProducerGroup()));
        if (cmd.containsKey("namespace")) {
            p.setNamespace(cmd.getString("namespace"));  // topics and groups become "<namespace>%<name>" on the wire
        }
        p.setRetryTimesWhenSendFailed(cmd.getIntValue("retries"));
        p.setRetryTimesWhenSendAsyncFailed(cmd.getIntValue("retries"));
        p.setSendLatencyFaultEnable(cmd.getBooleanValue("latencyFault"));
        p.setUseTLS(cmd.getBooleanValue("useTLS"));  // every connection (NameServer, brokers) over TLS
        // A producer registers with a broker by its heartbeat only (every 30 s by default, the first one before it
        // knows any broker): producerConnection and transaction check-backs need it sooner.
        p.setHeartbeatBrokerInterval(1000);
        p.setSendMsgTimeout(cmd.containsKey("timeoutMs") ? cmd.getIntValue("timeoutMs") : 5000);
        if (cmd.containsKey("compressOver")) {
            p.setCompressMsgBodyOverHowmuch(cmd.getIntValue("compressOver"));
        }
    }

    /** An ACL signer when the command carries accessKey/secretKey (AclClientRPCHook, rocketmq-acl), else null. */
    static RPCHook aclHook(JSONObject cmd) {
        if (!cmd.containsKey("accessKey")) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(cmd.getString("accessKey"), cmd.getString("secretKey")));
    }

    /**
     * {namesrv, group, message, timeoutMs}: DefaultMQProducer#request (RocketMQ 4.6+ request-reply); the reply
     * message, or {"error": ...} when none came in time.
     */
    static JSONObject request(JSONObject cmd) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(cmd.getString("group"), aclHook(cmd));
        configure(p, cmd);
        p.start();
        try {
            Message reply = p.request(Messages.of(cmd.getJSONObject("message")), cmd.getLongValue("requestTimeoutMs"));
            return Messages.json((MessageExt) reply);
        } catch (Exception e) {
            return Messages.error(e);
        } finally {
            p.shutdown();
        }
    }

    /** {namesrv, group, mode: sync|async|oneway|batch|selector, messages: [..], keepAs?}: the send results in order. */
    static JSONArray send(JSONObject cmd) throws Exception {
        // enableMsgTrace: the client's trace hook writes a record per send to RMQ_SYS_TRACE_TOPIC
        DefaultMQProducer p = new DefaultMQProducer(cmd.getString("group"), aclHook(cmd), cmd.getBooleanValue("trace"),
            null);
        configure(p, cmd);
        p.start();
        // keepAs: the producer stays open under that name until a "close" (its trace dispatcher sends the Pub
        // records asynchronously, and a shutdown right after the sends may drop those still on their way).
        String keepAs = cmd.getString("keepAs");
        if (keepAs != null) {
            Driver.CLIENTS.put(keepAs, p::shutdown);
        }
        try {
            String mode = cmd.getString("mode");
            List<Message> msgs = Messages.of(cmd.getJSONArray("messages"));
            JSONArray out = new JSONArray();
            if ("batch".equals(mode)) {
                out.add(Messages.json(p.send(msgs)));
                return out;
            }
            if ("async".equals(mode)) {
                return sendAsync(p, msgs);
            }
            for (Message m : msgs) {
                try {
                    if ("oneway".equals(mode)) {
                        p.sendOneway(m);
                        out.add(new JSONObject().fluentPut("status", "ONEWAY"));
                    } else if ("selector".equals(mode)) {
                        // MessageListenerOrderly's producer side: one sharding key, one queue.
                        String key = m.getProperty("shardingKey");
                        out.add(Messages.json(p.send(m, (mqs, msg, arg) ->
                            mqs.get(Math.abs(arg.hashCode()) % mqs.size()), key)));
                    } else {
                        out.add(Messages.json(p.send(m)));
                    }
                } catch (Exception e) {
                    out.add(Messages.error(e));
                }
            }
            return out;
        } finally {
            if (keepAs == null) {
                p.shutdown();
            }
        }
    }

    private static JSONArray sendAsync(DefaultMQProducer p, List<Message> msgs) throws Exception {
        JSONObject[] results = new JSONObject[msgs.size()];
        CountDownLatch done = new CountDownLatch(msgs.size());
        for (int i = 0; i < msgs.size(); i++) {
            final int index = i;
            p.send(msgs.get(i), new SendCallback() {
                @Override
                public void onSuccess(SendResult r) {
                    results[index] = Messages.json(r);
                    done.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    results[index] = Messages.error(e);
                    done.countDown();
                }
            });
        }
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("async sends: " + done.getCount() + " callbacks never came");
        }
        JSONArray out = new JSONArray();
        for (JSONObject r : results) {
            out.add(r);
        }
        return out;
    }

    /**
     * {name, namesrv, group, topic, messages: [{body, keys, local: COMMIT|ROLLBACK|UNKNOW, checks: [..]}]}.
     * The producer stays up (its check-back listener answers the broker) until "close"; each check-back is an
     * event {"event": "check", "name", "key", "answer", "times"}. The answer: the send results.
     */
    static JSONArray transaction(JSONObject cmd) throws Exception {
        String name = cmd.getString("name");
        JSONArray specs = cmd.getJSONArray("messages");
        Map<String, JSONObject> byKey = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> checks = new ConcurrentHashMap<>();
        for (int i = 0; i < specs.size(); i++) {
            JSONObject spec = specs.getJSONObject(i);
            byKey.put(spec.getJSONArray("keys").getString(0), spec);
        }
        TransactionMQProducer p = new TransactionMQProducer(cmd.getString("group"));
        configure(p, cmd);
        p.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return LocalTransactionState.valueOf(byKey.get(msg.getKeys()).getString("local"));
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                String key = msg.getKeys();
                int n = checks.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
                JSONArray answers = byKey.get(key).getJSONArray("checks");
                String answer = answers.getString(Math.min(n, answers.size()) - 1);
                Driver.emit(new JSONObject().fluentPut("event", "check").fluentPut("name", name)
                    .fluentPut("key", key).fluentPut("answer", answer).fluentPut("times", n)
                    .fluentPut("transactionId", msg.getTransactionId())
                    .fluentPut("checkTimes", msg.getProperty("TRANSACTION_CHECK_TIMES")));
                return LocalTransactionState.valueOf(answer);
            }
        });
        p.start();
        Driver.CLIENTS.put(name, p::shutdown);
        JSONArray out = new JSONArray();
        for (Message m : Messages.of(specs)) {
            SendResult r = p.sendMessageInTransaction(m, null);
            out.add(Messages.json(r).fluentPut("localState",
                ((org.apache.rocketmq.client.producer.TransactionSendResult) r).getLocalTransactionState().name()));
        }
        return out;
    }

    static MessageQueue queue(JSONObject q) {
        return new MessageQueue(q.getString("topic"), q.getString("brokerName"), q.getIntValue("queueId"));
    }
}
