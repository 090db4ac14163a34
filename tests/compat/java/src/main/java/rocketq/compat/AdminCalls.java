package rocketq.compat;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.Map;
import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.ConsumeMessageDirectlyResult;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/** DefaultMQAdminExt calls: {namesrv, call, ...arguments}; the answer as plain JSON (queues as "broker:id"). */
final class AdminCalls {
    private AdminCalls() {
    }

    static Object call(JSONObject cmd) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(cmd.getString("namesrv"));
        admin.setInstanceName(Driver.instanceName("admin"));
        admin.start();
        try {
            return dispatch(admin, cmd);
        } finally {
            admin.shutdown();
        }
    }

    private static String q(MessageQueue mq) {
        return mq.getBrokerName() + ":" + mq.getQueueId();
    }

    private static Object dispatch(DefaultMQAdminExt admin, JSONObject cmd) throws Exception {
        String call = cmd.getString("call");
        switch (call) {
            case "examineBrokerClusterInfo": {
                ClusterInfo info = admin.examineBrokerClusterInfo();
                return new JSONObject().fluentPut("brokers", info.getBrokerAddrTable().keySet())
                    .fluentPut("clusters", info.getClusterAddrTable());
            }
            case "examineTopicStats": {
                TopicStatsTable stats = admin.examineTopicStats(cmd.getString("topic"));
                JSONObject out = new JSONObject();
                for (Map.Entry<MessageQueue, TopicOffset> e : stats.getOffsetTable().entrySet()) {
                    out.put(q(e.getKey()), new JSONObject().fluentPut("min", e.getValue().getMinOffset())
                        .fluentPut("max", e.getValue().getMaxOffset())
                        .fluentPut("lastUpdate", e.getValue().getLastUpdateTimestamp()));
                }
                return out;
            }
            case "examineConsumeStats": {
                ConsumeStats stats = cmd.containsKey("topic")
                    ? admin.examineConsumeStats(cmd.getString("group"), cmd.getString("topic"))
                    : admin.examineConsumeStats(cmd.getString("group"));
                JSONObject queues = new JSONObject();
                for (Map.Entry<MessageQueue, OffsetWrapper> e : stats.getOffsetTable().entrySet()) {
                    queues.put(e.getKey().getTopic() + "/" + q(e.getKey()), new JSONObject()
                        .fluentPut("broker", e.getValue().getBrokerOffset())
                        .fluentPut("consumer", e.getValue().getConsumerOffset()));
                }
                return new JSONObject().fluentPut("queues", queues).fluentPut("tps", stats.getConsumeTps())
                    .fluentPut("diff", stats.computeTotalDiff());
            }
            case "queryMessage": {
                QueryResult r = admin.queryMessage(cmd.getString("topic"), cmd.getString("key"), 32, 0,
                    Long.MAX_VALUE);
                return Messages.json(r.getMessageList());
            }
            case "queryMessageByUniqKey": {
                QueryResult r = admin.queryMessageByUniqKey(cmd.getString("topic"), cmd.getString("key"), 32, 0,
                    Long.MAX_VALUE);
                return Messages.json(r.getMessageList());
            }
            case "viewMessage": {
                MessageExt m = cmd.containsKey("topic")
                    ? admin.viewMessage(cmd.getString("topic"), cmd.getString("msgId"))
                    : admin.viewMessage(cmd.getString("msgId"));
                return Messages.json(m);
            }
            case "resetOffsetByTimestamp": {
                Map<MessageQueue, Long> reset = admin.resetOffsetByTimestamp(cmd.getString("topic"),
                    cmd.getString("group"), cmd.getLongValue("timestamp"), true);
                JSONObject out = new JSONObject();
                for (Map.Entry<MessageQueue, Long> e : reset.entrySet()) {
                    out.put(q(e.getKey()), e.getValue());
                }
                return out;
            }
            case "examineConsumerConnectionInfo": {
                ConsumerConnection c = admin.examineConsumerConnectionInfo(cmd.getString("group"));
                JSONArray clients = new JSONArray();
                c.getConnectionSet().forEach(conn -> clients.add(new JSONObject()
                    .fluentPut("clientId", conn.getClientId()).fluentPut("language", conn.getLanguage().name())
                    .fluentPut("version", conn.getVersion())));
                return new JSONObject().fluentPut("clients", clients)
                    .fluentPut("messageModel", c.getMessageModel().name())
                    .fluentPut("consumeType", c.getConsumeType().name())
                    .fluentPut("topics", c.getSubscriptionTable().keySet());
            }
            case "getConsumerRunningInfo": {
                ConsumerRunningInfo info = admin.getConsumerRunningInfo(cmd.getString("group"),
                    cmd.getString("clientId"), cmd.getBooleanValue("jstack"));
                JSONObject queues = new JSONObject();
                info.getMqTable().forEach((mq, pq) -> queues.put(mq.getTopic() + "/" + q(mq), pq.getCommitOffset()));
                return new JSONObject().fluentPut("properties", info.getProperties())
                    .fluentPut("subscriptions", info.getSubscriptionSet().size())
                    .fluentPut("queues", queues).fluentPut("jstack", info.getJstack() != null);
            }
            case "consumeMessageDirectly": {
                ConsumeMessageDirectlyResult r = admin.consumeMessageDirectly(cmd.getString("group"),
                    cmd.getString("clientId"), cmd.getString("topic"), cmd.getString("msgId"));
                return new JSONObject().fluentPut("result", r.getConsumeResult().name())
                    .fluentPut("order", r.isOrder()).fluentPut("remark", r.getRemark());
            }
            default:
                throw new IllegalArgumentException("unknown admin call " + call);
        }
    }
}
