package rocketq.compat;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

/** DefaultMQPushConsumer (concurrently or orderly, clustering or broadcasting) and DefaultLitePullConsumer. */
final class Consumers {
    private static final Map<String, DefaultMQPushConsumer> PUSH = new ConcurrentHashMap<>();

    private Consumers() {
    }

    /**
     * {name, namesrv, group, topic, expr, sql, orderly, broadcast, fromWhere, failTimes, maxReconsumeTimes}: a push
     * consumer that prints {"event": "message", "name", "message": {..}} per delivery. A message whose key or
     * property "fail" asks for it is answered RECONSUME_LATER (concurrently) or SUSPEND_CURRENT_QUEUE_A_MOMENT
     * (orderly) for its first `failTimes` deliveries.
     */
    static String push(JSONObject cmd) throws Exception {
        String name = cmd.getString("name");
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(null, cmd.getString("group"), Producers.aclHook(cmd),
            new AllocateMessageQueueAveragely(), cmd.getBooleanValue("trace"), null);
        c.setNamesrvAddr(cmd.getString("namesrv"));
        c.setInstanceName(Driver.instanceName(name));
        c.setUseTLS(cmd.getBooleanValue("useTLS"));
        if (cmd.containsKey("namespace")) {
            c.setNamespace(cmd.getString("namespace"));
        }
        c.setConsumeFromWhere(ConsumeFromWhere.valueOf("CONSUME_FROM_" + cmd.getString("fromWhere")));
        if (cmd.containsKey("timestamp")) {
            c.setConsumeTimestamp(cmd.getString("timestamp"));
        }
        if (cmd.getBooleanValue("broadcast")) {
            c.setMessageModel(MessageModel.BROADCASTING);
        }
        if (cmd.containsKey("maxReconsumeTimes")) {
            c.setMaxReconsumeTimes(cmd.getIntValue("maxReconsumeTimes"));
        }
        c.setSuspendCurrentQueueTimeMillis(200);
        c.setPullBatchSize(8);
        c.setConsumeMessageBatchMaxSize(1);
        if (cmd.getBooleanValue("sql")) {
            c.subscribe(cmd.getString("topic"), MessageSelector.bySql(cmd.getString("expr")));
        } else {
            c.subscribe(cmd.getString("topic"), cmd.getString("expr"));
        }
        final int failTimes = cmd.getIntValue("failTimes");
        final Map<String, AtomicInteger> failures = new ConcurrentHashMap<>();
        // replyPrefix: a request-reply replier (RocketMQ 4.6+): each message is answered with a reply message
        // (MessageUtil.createReplyMessage) whose body is the prefix and the request's body, sent by a producer.
        final DefaultMQProducer replier = cmd.containsKey("replyPrefix") ? replyProducer(cmd, name) : null;
        if (replier != null) {
            final byte[] prefix = cmd.getString("replyPrefix").getBytes(StandardCharsets.UTF_8);
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    try {
                        byte[] body = new byte[prefix.length + m.getBody().length];
                        System.arraycopy(prefix, 0, body, 0, prefix.length);
                        System.arraycopy(m.getBody(), 0, body, prefix.length, m.getBody().length);
                        replier.send(MessageUtil.createReplyMessage(m, body), 3000);
                        report(name, m, "replied");
                    } catch (Exception e) {
                        e.printStackTrace();
                        report(name, m, "reply-failed");
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        } else if (cmd.getBooleanValue("orderly")) {
            c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (shouldFail(m, failTimes, failures)) {
                        report(name, m, "suspend");
                        return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                    }
                    report(name, m, "ok");
                }
                return ConsumeOrderlyStatus.SUCCESS;
            });
        } else {
            c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (shouldFail(m, failTimes, failures)) {
                        report(name, m, "later");
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                    report(name, m, "ok");
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
        }
        c.start();
        PUSH.put(name, c);
        Driver.CLIENTS.put(name, () -> {
            PUSH.remove(name);
            c.shutdown();
            if (replier != null) {
                replier.shutdown();
            }
        });
        return c.getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
    }

    private static DefaultMQProducer replyProducer(JSONObject cmd, String name) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(cmd.getString("group") + "-replier", Producers.aclHook(cmd));
        p.setNamesrvAddr(cmd.getString("namesrv"));
        p.setInstanceName(Driver.instanceName(name + "-replier"));
        p.start();
        return p;
    }

    static String clientId(String name) {
        return PUSH.get(name).getDefaultMQPushConsumerImpl().getmQClientFactory().getClientId();
    }

    private static boolean shouldFail(MessageExt m, int failTimes, Map<String, AtomicInteger> failures) {
        if (failTimes <= 0 || m.getProperty("fail") == null) {
            return false;
        }
        String id = m.getProperty("fail");
        return failures.computeIfAbsent(id, k -> new AtomicInteger()).incrementAndGet() <= failTimes;
    }

    private static void report(String name, MessageExt m, String outcome) {
        Driver.emit(new JSONObject().fluentPut("event", "message").fluentPut("name", name)
            .fluentPut("outcome", outcome).fluentPut("thread", Thread.currentThread().getName())
            .fluentPut("message", Messages.json(m)));
    }

    /**
     * {namesrv, group, topic, expr, mode: subscribe|assign, seek: {queueId: offset}, count, timeoutMs}: polls until
     * `count` messages or the time is up, commits, and answers the messages and the committed offsets per queue.
     */
    static JSONObject litePull(JSONObject cmd) throws Exception {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(cmd.getString("group"));
        c.setNamesrvAddr(cmd.getString("namesrv"));
        c.setInstanceName(Driver.instanceName(cmd.getString("group")));
        c.setAutoCommit(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(200);
        String topic = cmd.getString("topic");
        boolean assign = "assign".equals(cmd.getString("mode"));
        if (!assign) {
            c.subscribe(topic, cmd.containsKey("expr") ? cmd.getString("expr") : "*");
        }
        c.start();
        try {
            Collection<MessageQueue> queues = c.fetchMessageQueues(topic);
            if (assign) {
                c.assign(queues);
                JSONObject seek = cmd.getJSONObject("seek");
                for (MessageQueue mq : queues) {
                    if (seek != null && seek.containsKey(String.valueOf(mq.getQueueId()))) {
                        c.seek(mq, seek.getLongValue(String.valueOf(mq.getQueueId())));
                    } else {
                        c.seekToBegin(mq);
                    }
                }
            }
            int count = cmd.getIntValue("count");
            long deadline = System.currentTimeMillis() + cmd.getLongValue("timeoutMs");
            List<MessageExt> got = new ArrayList<>();
            while (got.size() < count && System.currentTimeMillis() < deadline) {
                got.addAll(c.poll(200));
            }
            c.commitSync();
            JSONObject committed = new JSONObject();
            Set<MessageQueue> assigned = c.assignment();
            for (MessageQueue mq : assigned) {
                committed.put(mq.getBrokerName() + ":" + mq.getQueueId(), c.committed(mq));
            }
            return new JSONObject().fluentPut("messages", Messages.json(got)).fluentPut("committed", committed)
                .fluentPut("queues", assigned.size());
        } finally {
            c.shutdown();
        }
    }

    static JSONArray names() {
        return new JSONArray(new ArrayList<>(PUSH.keySet()));
    }
}
