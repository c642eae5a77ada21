// AmqPeer: the ActiveMQ Classic side of tests/integration/activemq.sh, on Debian's jars only.
//
// Debian's activemq package has no web console and no Jolokia endpoint, so `broker` starts an
// embedded BrokerService (loopback, no persistence, JMX on the platform MBean server) and serves
// Jolokia's own HttpRequestHandler (libjolokia-core-java) at /api/jolokia over the JDK's
// com.sun.net.httpserver, as the web console of a real deployment does on port 8161.
// `workload` is a JMS client (activemq-client) that makes the state the test reads: messages
// sent, dead-lettered by the broker after the client's RedeliveryPolicy gives up, and held
// unacknowledged by a consumer that stays connected until the process is killed.
import com.sun.net.httpserver.BasicAuthenticator;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.jms.Connection;
import javax.jms.Message;
import javax.jms.MessageConsumer;
import javax.jms.MessageProducer;
import javax.jms.Session;
import org.apache.activemq.ActiveMQConnection;
import org.apache.activemq.ActiveMQConnectionFactory;
import org.apache.activemq.RedeliveryPolicy;
import org.apache.activemq.broker.BrokerService;
import org.apache.activemq.broker.region.policy.AbortSlowAckConsumerStrategy;
import org.apache.activemq.broker.region.policy.PolicyEntry;
import org.apache.activemq.broker.region.policy.PolicyMap;
import org.jolokia.backend.BackendManager;
import org.jolokia.config.ConfigKey;
import org.jolokia.config.Configuration;
import org.jolokia.http.HttpRequestHandler;
import org.jolokia.util.LogHandler;
import org.json.simple.JSONAware;

public final class AmqPeer {
    private AmqPeer() {}

    public static void main(String[] args) throws Exception {
        if (args.length >= 2 && args[0].equals("broker")) {
            broker(args);
        } else if (args.length == 3 && args[0].equals("workload")) {
            workload(args[1], args[2]);
        } else if (args.length == 4 && args[0].equals("receive")) {
            receive(args[1], args[2], Integer.parseInt(args[3]));
        } else if (args.length == 4 && args[0].equals("deadletter")) {
            deadLetters(args[1], args[2], Integer.parseInt(args[3]));
        } else if (args.length == 5 && args[0].equals("fill")) {
            fill(args[1], Integer.parseInt(args[2]), Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        } else {
            System.err.println("usage: AmqPeer broker OUT_FILE [USER PASSWORD] | workload BROKER_URL READY_FILE | receive BROKER_URL QUEUE N | deadletter BROKER_URL QUEUE N | fill BROKER_URL QUEUES READY DEAD");
            System.exit(2);
        }
    }

    // ---- broker ----

    // Writes "OPENWIRE=tcp://127.0.0.1:P" and "JOLOKIA=P" into args[1] once both listen.
    private static void broker(String[] args) throws Exception {
        BrokerService b = new BrokerService();
        b.setBrokerName("localhost");
        b.setPersistent(false);
        b.setUseJmx(true);
        b.getManagementContext().setCreateConnector(false);
        b.setSchedulerSupport(false);
        // orders has the broker-side lease (a consumer silent for 120 s past its last ack is
        // aborted); every other queue has none, which is what qrel check reports.
        PolicyEntry orders = new PolicyEntry();
        orders.setQueue("orders");
        AbortSlowAckConsumerStrategy lease = new AbortSlowAckConsumerStrategy();
        lease.setMaxTimeSinceLastAck(120000);
        orders.setSlowConsumerStrategy(lease);
        PolicyMap policies = new PolicyMap();
        policies.setPolicyEntries(List.of(orders));
        b.setDestinationPolicy(policies);
        b.addConnector("tcp://127.0.0.1:0");
        b.start();
        b.waitUntilStarted();
        String url = b.getTransportConnectors().get(0).getConnectUri().toString();

        LogHandler log = new LogHandler() {
            public void debug(String m) {}
            public void info(String m) {}
            public void error(String m, Throwable t) { System.err.println("jolokia: " + m); }
        };
        Configuration conf = new Configuration(ConfigKey.AGENT_ID, "qrel-test");
        HttpRequestHandler handler = new HttpRequestHandler(conf, new BackendManager(conf, log), log);
        HttpServer http = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 16);
        var ctx = http.createContext("/api/jolokia", ex -> serve(handler, ex));
        if (args.length == 4) {
            final String user = args[2], pass = args[3];
            ctx.setAuthenticator(new BasicAuthenticator("activemq") {
                public boolean checkCredentials(String u, String p) {
                    return u.equals(user) && p.equals(pass);
                }
            });
        }
        http.start();
        Path out = Path.of(args[1]);
        Path tmp = Path.of(args[1] + ".tmp");
        Files.writeString(tmp, "OPENWIRE=" + url + "\nJOLOKIA=" + http.getAddress().getPort() + "\n");
        Files.move(tmp, out);
        Thread.currentThread().join();
    }

    private static void serve(HttpRequestHandler h, HttpExchange ex) throws IOException {
        URI uri = ex.getRequestURI();
        Map<String, String[]> params = new HashMap<>();
        String q = uri.getRawQuery();
        if (q != null)
            for (String kv : q.split("&")) {
                int i = kv.indexOf('=');
                if (i > 0)
                    params.put(java.net.URLDecoder.decode(kv.substring(0, i), StandardCharsets.UTF_8),
                               new String[] {java.net.URLDecoder.decode(kv.substring(i + 1), StandardCharsets.UTF_8)});
            }
        String pathInfo = uri.getRawPath().substring("/api/jolokia".length());
        JSONAware json;
        try {
            if (ex.getRequestMethod().equals("POST")) {
                try (InputStream in = ex.getRequestBody()) {
                    json = h.handlePostRequest(uri.toString(), in, "utf-8", params);
                }
            } else {
                json = h.handleGetRequest(uri.toString(), pathInfo, params);
            }
        } catch (Throwable t) {
            json = h.handleThrowable(t);
        }
        byte[] body = json.toJSONString().getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
        ex.sendResponseHeaders(200, body.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(body);
        }
    }

    // ---- workload ----

    private static void send(Session s, String queue, int n) throws Exception {
        MessageProducer p = s.createProducer(s.createQueue(queue));
        for (int i = 0; i < n; i++) {
            // the work id of `qrel dlq`'s test, as a JMS property
            Message m = s.createTextMessage(queue + " " + i);
            m.setStringProperty("order_id", queue + "-" + i);
            p.send(m);
        }
        p.close();
    }

    // Receives n messages of queue in a transacted session and rolls each back until the client's
    // RedeliveryPolicy (2 redeliveries, no delay) gives it up: the client then acks it as poison
    // and the broker moves it to its dead-letter queue with dlqDeliveryFailureCause.
    private static void deadLetter(ActiveMQConnectionFactory f, String queue, int n) throws Exception {
        ActiveMQConnection c = (ActiveMQConnection) f.createConnection();
        RedeliveryPolicy rp = new RedeliveryPolicy();
        rp.setMaximumRedeliveries(2);
        rp.setInitialRedeliveryDelay(0);
        rp.setRedeliveryDelay(0);
        c.setRedeliveryPolicy(rp);
        c.getPrefetchPolicy().setQueuePrefetch(1);
        c.start();
        Session s = c.createSession(true, Session.SESSION_TRANSACTED);
        MessageConsumer mc = s.createConsumer(s.createQueue(queue));
        int gone = 0;
        String last = null;
        while (gone < n) {
            Message m = mc.receive(10000);
            if (m == null)
                throw new IllegalStateException("no message on " + queue);
            String id = m.getJMSMessageID();
            if (last != null && !id.equals(last))
                gone++; // the previous one was given up
            last = id;
            if (gone < n)
                s.rollback();
        }
        // the message received last is the one after the n-th: put it back, then close
        s.rollback();
        c.close();
    }

    private static void workload(String url, String ready) throws Exception {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        Connection c = f.createConnection();
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        send(s, "orders", 5);
        send(s, "emails", 4);
        deadLetter(f, "orders", 2);
        deadLetter(f, "emails", 1);
        // One message put into the DLQ by hand, as an operator might: no OriginalDestination.
        send(s, "ActiveMQ.DLQ", 1);
        s.close();
        c.close();
        // The three orders left held: delivered, never acknowledged, the consumer connected. All
        // of them, since a client-ack consumer acks "delivered" to widen its prefetch window and
        // the broker would dispatch one more than the consumer received.
        ActiveMQConnection h = (ActiveMQConnection) f.createConnection();
        h.getPrefetchPolicy().setQueuePrefetch(3);
        h.start();
        Session hs = h.createSession(false, Session.CLIENT_ACKNOWLEDGE);
        MessageConsumer hc = hs.createConsumer(hs.createQueue("orders"));
        List<Message> held = new ArrayList<>();
        while (held.size() < 3) {
            Message m = hc.receive(10000);
            if (m == null)
                throw new IllegalStateException("orders: fewer than 3 messages to hold");
            held.add(m);
        }
        Files.writeString(Path.of(ready), "held " + held.size() + "\n");
        Thread.currentThread().join();
    }

    // ---- deadletter ----

    // Sends n + 1 messages to queue (order_id QUEUE-0 … QUEUE-n) and has the broker dead-letter
    // the first n as the workload does; the last one stays ready on the queue (deadLetter stops
    // at the message after the n-th).
    private static void deadLetters(String url, String queue, int n) throws Exception {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        Connection c = f.createConnection();
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        send(s, queue, n + 1);
        c.close();
        deadLetter(f, queue, n);
    }

    // ---- receive ----

    // Receives n messages of queue (auto-acknowledged) and prints each as "TEXT|order_id", in
    // the order received: what a consumer gets of a message `qrel dlq replay` put back.
    private static void receive(String url, String queue, int n) throws Exception {
        Connection c = new ActiveMQConnectionFactory(url).createConnection();
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        MessageConsumer mc = s.createConsumer(s.createQueue(queue));
        for (int i = 0; i < n; i++) {
            Message m = mc.receive(10000);
            if (m == null)
                throw new IllegalStateException(queue + ": fewer than " + n + " messages");
            System.out.println(((javax.jms.TextMessage) m).getText() + "|" + m.getStringProperty("order_id"));
        }
        c.close();
    }

    // ---- fill (bench/activemq.sh) ----

    // Queues bench.0 to bench.(queues-1), each with `dead` messages dead-lettered into ActiveMQ.DLQ
    // by the broker (a transacted consumer rolls each back once; its RedeliveryPolicy allows no
    // redelivery, so the client acks it as poison) and then `ready` messages left ready. Two
    // connections work at once, queue i on connection i mod 2; the sends are asynchronous (one
    // round trip per queue, not per message). Prints "filled QUEUES" when both are done.
    private static void fill(String url, int queues, int ready, int dead) throws Exception {
        List<Thread> workers = new ArrayList<>();
        List<Throwable> failed = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int part = 0; part < 2; part++) {
            final int first = part;
            Thread t = new Thread(() -> {
                try {
                    fillPart(url, queues, ready, dead, first);
                } catch (Throwable e) {
                    failed.add(e);
                }
            });
            t.start();
            workers.add(t);
        }
        for (Thread t : workers)
            t.join();
        if (!failed.isEmpty())
            throw new IllegalStateException("fill failed", failed.get(0));
        System.out.println("filled " + queues);
    }

    private static void fillPart(String url, int queues, int ready, int dead, int first) throws Exception {
        ActiveMQConnectionFactory f = new ActiveMQConnectionFactory(url);
        f.setUseAsyncSend(true);
        ActiveMQConnection c = (ActiveMQConnection) f.createConnection();
        RedeliveryPolicy rp = new RedeliveryPolicy();
        rp.setMaximumRedeliveries(0);
        c.setRedeliveryPolicy(rp);
        c.getPrefetchPolicy().setQueuePrefetch(1);
        c.start();
        Session s = c.createSession(false, Session.AUTO_ACKNOWLEDGE);
        Session tx = c.createSession(true, Session.SESSION_TRANSACTED);
        for (int i = first; i < queues; i += 2) {
            String name = "bench." + i;
            if (dead > 0) {
                send(s, name, dead);
                MessageConsumer mc = tx.createConsumer(tx.createQueue(name));
                for (int k = 0; k < dead; k++) {
                    if (mc.receive(10000) == null)
                        throw new IllegalStateException("no message on " + name);
                    tx.rollback(); // given up at once: the broker moves it to ActiveMQ.DLQ
                }
                mc.close();
            }
            if (ready > 0)
                send(s, name, ready);
            else
                s.createConsumer(s.createQueue(name)).close(); // the queue exists, empty
        }
        // The asynchronous sends are not confirmed one by one; closing the connection is a
        // synchronous request that the broker answers after everything sent before it.
        tx.close();
        s.close();
        c.close();
    }
}
