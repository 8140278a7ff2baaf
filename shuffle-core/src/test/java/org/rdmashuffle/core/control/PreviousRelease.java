package org.rdmashuffle.core.control;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The control plane of the builds before version negotiation (0.1.0-SNAPSHOT before 2026-12-02,
 * protocol version 3), encoded as they encode it, so that every later release proves it still talks to it
 * (docs/compatibility.md): a client that sends its one version in the HELLO's type byte and accepts
 * nothing else in a CHALLENGE or AUTH_OK, and a server that refuses every other version in that
 * release's words. Written from the version-3 builds' ControlClient, ControlServerConnection, ControlFrame and
 * ChallengeResponse, on plain sockets, sharing no code with this release's control plane but the
 * in-process types a handler sees (ControlHandler, ControlSession) and the exceptions a caller acts on.
 * Do not change it with the control plane: when a release changes the wire, the encoding it replaces
 * becomes the next fixture, and this one goes when its version is no longer spoken.
 *
 * <p>Blocking, a thread per connection, every wait bounded: a fixture for tests, not a server to attack.
 */
public final class PreviousRelease {
    /** the version-3 builds' ControlFrame.PROTOCOL_VERSION. */
    public static final int VERSION = 3;
    // the version-3 builds' frame kinds.
    private static final byte HELLO = 1;
    private static final byte CHALLENGE = 2;
    private static final byte RESPONSE = 3;
    private static final byte AUTH_OK = 4;
    private static final byte REQUEST = 5;
    private static final byte REPLY = 6;
    private static final byte ERROR = 7;
    private static final byte HELLO_UNAUTHENTICATED = 8;
    private static final int CALL_ID_BYTES = 8;
    private static final int NONCE = 32;
    private static final int MAC = 32;
    private static final int MAX_APP_ID = 256;
    private static final int MAX_FRAME = 64 << 10;
    private static final String BUSY = "the server is busy: try again";
    private static final String FAILED = "the request failed (see the server's log)";
    private static final SecureRandom RANDOM = new SecureRandom();

    private PreviousRelease() {
    }

    /** the version-3 builds' ERROR text for a client of version {@code theirs}, from a server of {@code ours}. */
    static String refusal(int theirs, int ours) {
        return "rdma-shuffle control protocol version " + theirs + " is not spoken here (this side speaks version "
                + ours + "): run the same rdma-shuffle release on both sides";
    }

    private record Frame(byte kind, byte type, byte[] payload) {
        String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }
    }

    private static void write(DataOutputStream out, byte kind, byte type, byte[] payload) throws IOException {
        synchronized (out) {
            out.writeInt(2 + payload.length);
            out.writeByte(kind);
            out.writeByte(type);
            out.write(payload);
            out.flush();
        }
    }

    /** The next frame, or null when the peer closed the connection. */
    private static Frame read(DataInputStream in) throws IOException {
        int length;
        try {
            length = in.readInt();
        } catch (EOFException closed) {
            return null;
        }
        if (length < 2 || length > MAX_FRAME) {
            throw new IOException("a frame of " + length + " bytes");
        }
        byte[] frame = new byte[length];
        in.readFully(frame);
        return new Frame(frame[0], frame[1], java.util.Arrays.copyOfRange(frame, 2, length));
    }

    private static byte[] mac(byte[] secret, String role, String appId, byte[] first, byte[] second) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            mac.update(role.getBytes(StandardCharsets.US_ASCII));
            byte[] id = appId.getBytes(StandardCharsets.UTF_8);
            mac.update(ByteBuffer.allocate(4).putInt(id.length).array());
            mac.update(id);
            mac.update(first);
            mac.update(second);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] nonce() {
        byte[] n = new byte[NONCE];
        RANDOM.nextBytes(n);
        return n;
    }

    /** the version-3 builds' ControlClient: connect, authenticate (or announce itself), then one call at a time. */
    public static final class Client implements AutoCloseable {
        private final InetSocketAddress peer;
        private final Socket socket;
        private final DataInputStream in;
        private final DataOutputStream out;
        private long lastCallId;

        private Client(InetSocketAddress peer, Duration timeout) throws IOException {
            this.peer = peer;
            socket = new Socket();
            try {
                socket.connect(peer, (int) timeout.toMillis());
                socket.setSoTimeout((int) timeout.toMillis());
                in = new DataInputStream(socket.getInputStream());
                out = new DataOutputStream(socket.getOutputStream());
            } catch (IOException e) {
                socket.close();
                throw new IOException("cannot reach the control plane of " + peer + ": " + e.getMessage(), e);
            }
        }

        /**
         * Connects and authenticates for {@code appId} with {@code secret} (null: authentication off), in
         * version {@link #VERSION} alone, as those builds do.
         *
         * @throws ProtocolVersionException the server refused our version, or answered in another
         * @throws AuthenticationException the server refused us, or does not know the secret itself
         */
        public static Client connect(InetSocketAddress peer, byte[] secret, String appId, Duration timeout) throws IOException {
            Client c = new Client(peer, timeout);
            try {
                byte[] id = appId.getBytes(StandardCharsets.UTF_8);
                if (secret == null) {
                    write(c.out, HELLO_UNAUTHENTICATED, (byte) VERSION, id);
                    c.requireAuthOk(c.handshakeFrame(), null);
                    return c;
                }
                byte[] clientNonce = nonce();
                write(c.out, HELLO, (byte) VERSION, ByteBuffer.allocate(2 + id.length + NONCE).putShort((short) id.length)
                        .put(id).put(clientNonce).array());
                Frame challenge = c.handshakeFrame();
                if (challenge.kind() != CHALLENGE || challenge.payload().length != NONCE) {
                    throw new AuthenticationException(peer + " refused the handshake for application " + appId);
                }
                write(c.out, RESPONSE, (byte) 0, mac(secret, "client", appId, challenge.payload(), clientNonce));
                Frame ok = c.handshakeFrame();
                c.requireAuthOk(ok, appId);
                if (!MessageDigest.isEqual(ok.payload(), mac(secret, "server", appId, clientNonce, challenge.payload()))) {
                    throw new AuthenticationException("the server for application " + appId + " does not know the secret");
                }
                return c;
            } catch (IOException | RuntimeException e) {
                c.close();
                throw e;
            }
        }

        /** A frame of the handshake, checked as the version-3 builds' requireNotBusy and requireOurVersion check it. */
        private Frame handshakeFrame() throws IOException {
            Frame f = read(in);
            if (f == null) {
                throw new AuthenticationException(peer + " closed the connection during the handshake");
            }
            if (f.kind() == ERROR && f.text().equals(BUSY)) {
                throw new ServerBusyException(String.valueOf(peer));
            }
            if (f.kind() == ERROR && f.text().startsWith("rdma-shuffle control protocol version")) {
                throw new ProtocolVersionException(peer + " refused the connection: " + f.text());
            }
            if ((f.kind() == CHALLENGE || f.kind() == AUTH_OK) && f.type() != VERSION) {
                throw new ProtocolVersionException(peer + " speaks rdma-shuffle control protocol version " + f.type()
                        + " (this side speaks version " + VERSION + "): run the same rdma-shuffle release on both sides");
            }
            return f;
        }

        private void requireAuthOk(Frame f, String appId) throws AuthenticationException {
            if (f.kind() != AUTH_OK) {
                throw new AuthenticationException(peer + " refused authentication" + (appId == null ? "" : " for " + appId)
                        + (f.kind() == ERROR ? " (" + f.text() + ")" : ""));
            }
        }

        /** Sends a request and waits for its reply; an ERROR becomes an IOException with its text. */
        public synchronized byte[] call(byte type, byte[] payload) throws IOException {
            long callId = ++lastCallId;
            write(out, REQUEST, type, ByteBuffer.allocate(CALL_ID_BYTES + payload.length).putLong(callId).put(payload).array());
            while (true) {
                Frame f;
                try {
                    f = read(in);
                } catch (SocketTimeoutException e) {
                    throw new IOException("the reply to request type " + type + " did not come from " + peer, e);
                }
                if (f == null) {
                    throw new IOException(peer + " closed the connection while waiting for request type " + type);
                }
                if ((f.kind() != REPLY && f.kind() != ERROR) || f.payload().length < CALL_ID_BYTES) {
                    throw new IOException(peer + " sent frame kind " + f.kind() + " to request type " + type);
                }
                if (ByteBuffer.wrap(f.payload()).getLong() < callId) {
                    continue; // those builds skip replies to calls that timed out
                }
                byte[] body = java.util.Arrays.copyOfRange(f.payload(), CALL_ID_BYTES, f.payload().length);
                if (f.kind() == ERROR) {
                    throw new IOException(peer + " failed request type " + type + ": " + new String(body, StandardCharsets.UTF_8));
                }
                return body;
            }
        }

        public boolean isOpen() {
            return !socket.isClosed();
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing
            }
        }
    }

    /**
     * the version-3 builds' ControlServer as a peer meets it: the handshake in its version alone (any other refused
     * in its words, then closed), then requests handed to {@code handler} one at a time, on the
     * connection's thread; what a session set up ends when its connection does.
     */
    public static final class Server implements AutoCloseable {
        private final ServerSocket listener;
        private final Function<String, byte[]> secrets;
        private final ControlHandler handler;
        private final int version;
        private final Set<Socket> open = ConcurrentHashMap.newKeySet();
        private final AtomicInteger versionRefusals = new AtomicInteger();
        private final AtomicInteger sessions = new AtomicInteger();

        /** A version-3 server: version {@link #VERSION}; {@code secrets} null turns authentication off. */
        public Server(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler) throws IOException {
            this(bind, secrets, handler, VERSION);
        }

        /** As the version-3 builds' server, but speaking {@code version} alone: a release older than the previous one. */
        public Server(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int version)
                throws IOException {
            this.secrets = secrets;
            this.handler = handler;
            this.version = version;
            listener = new ServerSocket();
            listener.bind(bind);
            Thread.ofPlatform().daemon().name("previous-release-control-accept").start(this::accept);
        }

        public InetSocketAddress address() {
            return (InetSocketAddress) listener.getLocalSocketAddress();
        }

        /** HELLOs refused for their version so far. */
        public int versionRefusals() {
            return versionRefusals.get();
        }

        /** Connections that authenticated so far. */
        public int sessions() {
            return sessions.get();
        }

        private void accept() {
            while (!listener.isClosed()) {
                try {
                    Socket s = listener.accept();
                    open.add(s);
                    Thread.ofPlatform().daemon().name("previous-release-control").start(() -> serve(s));
                } catch (IOException closing) {
                    return;
                }
            }
        }

        private void serve(Socket socket) {
            ControlSession session = null;
            try (socket) {
                socket.setSoTimeout(30_000); // the version-3 builds' handshake timeout; its idle timeout is longer than a test
                DataInputStream in = new DataInputStream(socket.getInputStream());
                DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                String appId = handshake(in, out);
                if (appId == null) {
                    return;
                }
                sessions.incrementAndGet();
                socket.setSoTimeout(0);
                session = new ControlSession(appId, socket.getRemoteSocketAddress(), version);
                for (Frame f; (f = read(in)) != null; ) {
                    if (f.kind() != REQUEST || f.payload().length < CALL_ID_BYTES) {
                        return; // 0.1.0 closes on anything an honest peer does not send
                    }
                    byte[] callId = java.util.Arrays.copyOf(f.payload(), CALL_ID_BYTES);
                    byte[] request = java.util.Arrays.copyOfRange(f.payload(), CALL_ID_BYTES, f.payload().length);
                    byte kind;
                    byte[] body;
                    try {
                        body = handler.handle(session, f.type(), request);
                        kind = REPLY;
                    } catch (RequestRefusedException e) {
                        body = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
                        kind = ERROR;
                    } catch (Exception e) {
                        body = FAILED.getBytes(StandardCharsets.UTF_8);
                        kind = ERROR;
                    }
                    write(out, kind, f.type(), ByteBuffer.allocate(CALL_ID_BYTES + body.length).put(callId).put(body).array());
                }
            } catch (IOException | RuntimeException closed) {
                // the peer went, or sent what 0.1.0 closes on
            } finally {
                open.remove(socket);
                if (session != null) {
                    session.closed();
                }
            }
        }

        /** the version-3 builds' handshake, server side: the application authenticated, or null (refused, and told why where 0.1.0 tells). */
        private String handshake(DataInputStream in, DataOutputStream out) throws IOException {
            Frame hello = read(in);
            if (hello == null || (hello.kind() != HELLO && hello.kind() != HELLO_UNAUTHENTICATED)) {
                return null;
            }
            if (hello.type() != version) {
                versionRefusals.incrementAndGet();
                write(out, ERROR, (byte) 0, refusal(hello.type(), version).getBytes(StandardCharsets.UTF_8));
                return null;
            }
            if (hello.kind() == HELLO_UNAUTHENTICATED) {
                if (secrets != null || hello.payload().length > MAX_APP_ID) {
                    return null;
                }
                write(out, AUTH_OK, (byte) version, new byte[0]);
                return hello.text();
            }
            if (secrets == null) {
                return null;
            }
            byte[] h = hello.payload();
            int idLength = h.length < 2 ? -1 : ((h[0] & 0xFF) << 8) | (h[1] & 0xFF);
            if (idLength < 0 || idLength > MAX_APP_ID || h.length != 2 + idLength + NONCE) {
                return null;
            }
            String appId = new String(h, 2, idLength, StandardCharsets.UTF_8);
            byte[] clientNonce = java.util.Arrays.copyOfRange(h, 2 + idLength, h.length);
            byte[] secret = secrets.apply(appId);
            byte[] serverNonce = nonce();
            write(out, CHALLENGE, (byte) version, serverNonce);
            Frame response = read(in);
            if (secret == null || response == null || response.kind() != RESPONSE || response.payload().length != MAC
                    || !MessageDigest.isEqual(response.payload(), mac(secret, "client", appId, serverNonce, clientNonce))) {
                return null;
            }
            write(out, AUTH_OK, (byte) version, mac(secret, "server", appId, clientNonce, serverNonce));
            return appId;
        }

        @Override
        public void close() {
            try {
                listener.close();
            } catch (IOException ignored) {
                // closing
            }
            for (Socket s : open) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing
                }
            }
        }
    }
}
