package rocketq.compat;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageExt;

/** Messages to and from the JSON of the driver protocol (bodies in base64). */
final class Messages {
    private Messages() {
    }

    /** {topic, body (base64), tags, keys: [..], props: {..}, delayLevel, flag}. */
    static Message of(JSONObject spec) {
        Message m = new Message(spec.getString("topic"), Base64.getDecoder().decode(spec.getString("body")));
        if (spec.containsKey("tags")) {
            m.setTags(spec.getString("tags"));
        }
        JSONArray keys = spec.getJSONArray("keys");
        if (keys != null) {
            m.setKeys(keys.toJavaList(String.class));
        }
        if (spec.containsKey("delayLevel")) {
            m.setDelayTimeLevel(spec.getIntValue("delayLevel"));
        }
        if (spec.containsKey("flag")) {
            m.setFlag(spec.getIntValue("flag"));
        }
        JSONObject props = spec.getJSONObject("props");
        if (props != null) {
            for (Map.Entry<String, Object> e : props.entrySet()) {
                // MessageAccessor, not putUserProperty: the timer properties (__STARTDELIVERTIME, TIMER_DELIVER_MS)
                // are reserved names a user may not set through the public API of this client version.
                MessageAccessor.putProperty(m, e.getKey(), String.valueOf(e.getValue()));
            }
        }
        return m;
    }

    static List<Message> of(JSONArray specs) {
        List<Message> out = new ArrayList<>();
        for (int i = 0; i < specs.size(); i++) {
            out.add(of(specs.getJSONObject(i)));
        }
        return out;
    }

    static JSONObject json(MessageExt m) {
        return new JSONObject()
            .fluentPut("topic", m.getTopic())
            .fluentPut("tags", m.getTags())
            .fluentPut("keys", m.getKeys())
            .fluentPut("body", Base64.getEncoder().encodeToString(m.getBody()))
            .fluentPut("props", m.getProperties())
            .fluentPut("msgId", m.getMsgId())
            .fluentPut("offsetMsgId", m instanceof org.apache.rocketmq.common.message.MessageClientExt
                ? ((org.apache.rocketmq.common.message.MessageClientExt) m).getOffsetMsgId() : m.getMsgId())
            .fluentPut("queueId", m.getQueueId())
            .fluentPut("queueOffset", m.getQueueOffset())
            .fluentPut("brokerName", m.getBrokerName())
            .fluentPut("reconsumeTimes", m.getReconsumeTimes())
            .fluentPut("flag", m.getFlag())
            .fluentPut("sysFlag", m.getSysFlag())
            .fluentPut("bornTimestamp", m.getBornTimestamp())
            .fluentPut("storeTimestamp", m.getStoreTimestamp());
    }

    static JSONArray json(List<MessageExt> msgs) {
        JSONArray out = new JSONArray();
        for (MessageExt m : msgs) {
            out.add(json(m));
        }
        return out;
    }

    static JSONObject json(SendResult r) {
        JSONObject out = new JSONObject()
            .fluentPut("status", r.getSendStatus().name())
            .fluentPut("msgId", r.getMsgId())
            .fluentPut("offsetMsgId", r.getOffsetMsgId())
            .fluentPut("queueOffset", r.getQueueOffset())
            .fluentPut("transactionId", r.getTransactionId());
        if (r.getMessageQueue() != null) {
            out.put("queueId", r.getMessageQueue().getQueueId());
            out.put("brokerName", r.getMessageQueue().getBrokerName());
        }
        return out;
    }

    static JSONObject error(Throwable e) {
        return new JSONObject().fluentPut("error", e.getClass().getSimpleName() + ": " + e.getMessage());
    }
}
