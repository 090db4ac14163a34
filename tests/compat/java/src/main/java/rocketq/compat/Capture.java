package rocketq.compat;

import com.alibaba.fastjson.JSONObject;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * System.out and System.err as seen by the code of one thread: an mqadmin command's output is collected for its
 * answer; everything else goes to the real stderr. mqadmin commands run one at a time (MQAdminStartup keeps its
 * NameServer address in a system property).
 */
final class Capture {
    private static final PrintStream REAL_ERR = System.err;
    private static final InheritableThreadLocal<ByteArrayOutputStream> OUT = new InheritableThreadLocal<>();
    private static final InheritableThreadLocal<ByteArrayOutputStream> ERR = new InheritableThreadLocal<>();
    private static final Object MQADMIN = new Object();

    private Capture() {
    }

    static void install() {
        System.setOut(new PrintStream(new Switch(OUT), true));
        System.setErr(new PrintStream(new Switch(ERR), true));
    }

    static JSONObject mqadmin(List<String> args) {
        synchronized (MQADMIN) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            OUT.set(out);
            ERR.set(err);
            try {
                MQAdminStartup.main0(args.toArray(new String[0]), null);
            } finally {
                System.out.flush();
                System.err.flush();
                OUT.remove();
                ERR.remove();
            }
            String errText = new String(err.toByteArray(), StandardCharsets.UTF_8);
            REAL_ERR.print(errText);
            return new JSONObject()
                .fluentPut("stdout", new String(out.toByteArray(), StandardCharsets.UTF_8))
                .fluentPut("stderr", errText);
        }
    }

    private static final class Switch extends OutputStream {
        private final ThreadLocal<ByteArrayOutputStream> target;

        Switch(ThreadLocal<ByteArrayOutputStream> target) {
            this.target = target;
        }

        private OutputStream sink() {
            ByteArrayOutputStream buffer = target.get();
            return buffer != null ? buffer : REAL_ERR;
        }

        @Override
        public void write(int b) {
            try {
                sink().write(b);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            try {
                sink().write(b, off, len);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
