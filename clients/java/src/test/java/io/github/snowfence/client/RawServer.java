package io.github.snowfence.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback server that writes raw bytes: for answers the JDK's HTTP server
 * cannot give (a body cut short, chunked framing by hand, a connection
 * closed after an answer, interim 1xx answers). Each request (its request
 * line and headers) is answered by the next script step (the last repeats),
 * which writes to the socket and says whether to keep the connection.
 */
final class RawServer implements AutoCloseable {
    /** Answers one request on a connection; returns false to close the connection. */
    interface Step {
        boolean answer(String requestHead, OutputStream out, Socket socket) throws IOException;
    }

    private final ServerSocket listener;
    private final List<Step> script;
    final AtomicInteger requests = new AtomicInteger();
    final AtomicInteger connections = new AtomicInteger();
    final BlockingQueue<String> heads = new LinkedBlockingQueue<>();
    final String url;

    RawServer(Step... script) throws IOException {
        this.script = List.of(script);
        listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        url = "http://127.0.0.1:" + listener.getLocalPort();
        Thread t = new Thread(this::accept, "raw-server");
        t.setDaemon(true);
        t.start();
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket s = listener.accept();
                connections.incrementAndGet();
                Thread t = new Thread(() -> serve(s), "raw-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (s) {
            InputStream in = s.getInputStream();
            OutputStream out = s.getOutputStream();
            for (;;) {
                String head = readHead(in);
                if (head == null) {
                    return;
                }
                heads.add(head);
                int n = requests.getAndIncrement();
                Step step = script.get(Math.min(n, script.size() - 1));
                boolean keep = step.answer(head, out, s);
                out.flush();
                if (!keep) {
                    return;
                }
            }
        } catch (IOException e) {
            // the client went away
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int state = 0;
        for (int c; (c = in.read()) >= 0;) {
            b.write(c);
            state = c == '\n' ? state + 1 : c == '\r' ? state : 0;
            if (state == 2) {
                return b.toString(StandardCharsets.ISO_8859_1);
            }
        }
        return null;
    }

    /** Writes a text to out. */
    static void write(OutputStream out, String s) throws IOException {
        out.write(s.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** The count a request head asks for. */
    static int count(String head) {
        int i = head.indexOf("count=");
        int j = i + 6;
        while (Character.isDigit(head.charAt(j))) {
            j++;
        }
        return Integer.parseInt(head.substring(i + 6, j));
    }

    @Override
    public void close() throws IOException {
        listener.close();
    }
}
