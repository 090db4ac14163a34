package rocketq.compat;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One JVM that runs many scenarios of the compatibility suite with Apache RocketMQ's own Java client and tools.
 *
 * <p>Commands come as JSON lines on stdin: {"id": n, "op": "...", ...}. Each runs on its own thread and is answered
 * by one line {"id": n, "ok": true, "result": ...} or {"id": n, "ok": false, "error": "..."}; long-lived clients
 * (push consumers, transaction producers) also print events {"event": "...", "name": "...", ...} as they happen.
 * The protocol owns the real stdout: whatever the client libraries print goes to stderr (a log file of the test),
 * or into the answer of the mqadmin command that printed it.
 */
public final class Driver {
    private static final PrintStream PROTOCOL = new PrintStream(new FileOutputStream(FileDescriptor.out), true);
    private static final AtomicLong INSTANCES = new AtomicLong();
    static final Map<String, AutoCloseable> CLIENTS = new ConcurrentHashMap<>();

    private Driver() {
    }

    public static void main(String[] args) throws Exception {
        Capture.install();
        ExecutorService pool = Executors.newCachedThreadPool();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        emit(new JSONObject().fluentPut("event", "ready"));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.trim().isEmpty()) {
                continue;
            }
            final JSONObject cmd = JSON.parseObject(line);
            if ("exit".equals(cmd.getString("op"))) {
                break;
            }
            pool.submit(() -> run(cmd));
        }
        for (String name : CLIENTS.keySet()) {
            close(name);
        }
        pool.shutdownNow();
        Runtime.getRuntime().halt(0);
    }

    private static void run(JSONObject cmd) {
        JSONObject answer = new JSONObject().fluentPut("id", cmd.get("id"));
        try {
            answer.put("result", dispatch(cmd));
            answer.put("ok", true);
        } catch (Throwable e) {
            e.printStackTrace();
            answer.put("ok", false);
            answer.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        emit(answer);
    }

    private static Object dispatch(JSONObject cmd) throws Exception {
        String op = cmd.getString("op");
        switch (op) {
            case "ping":
                return "pong";
            case "send":
                return Producers.send(cmd);
            case "request":
                return Producers.request(cmd);
            case "transaction":
                return Producers.transaction(cmd);
            case "push":
                return Consumers.push(cmd);
            case "litePull":
                return Consumers.litePull(cmd);
            case "clientId":
                return Consumers.clientId(cmd.getString("name"));
            case "admin":
                return AdminCalls.call(cmd);
            case "mqadmin":
                return Capture.mqadmin(cmd.getJSONArray("args").toJavaList(String.class));
            case "close":
                return close(cmd.getString("name"));
            case "closeAll": {
                int closed = 0;
                for (String name : CLIENTS.keySet()) {
                    closed += close(name) ? 1 : 0;
                }
                return closed;
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }

    static boolean close(String name) {
        AutoCloseable client = CLIENTS.remove(name);
        if (client == null) {
            return false;
        }
        try {
            client.close();
        } catch (Exception e) {
            e.printStackTrace();
        }
        emit(new JSONObject().fluentPut("event", "closed").fluentPut("name", name));
        return true;
    }

    /** A fresh instanceName for every client: each gets its own MQClientInstance (clientId ip@instance). */
    static String instanceName(String hint) {
        return hint + "-" + INSTANCES.incrementAndGet();
    }

    static void emit(JSONObject line) {
        String text = line.toJSONString();
        synchronized (PROTOCOL) {
            PROTOCOL.println(text);
        }
    }
}
