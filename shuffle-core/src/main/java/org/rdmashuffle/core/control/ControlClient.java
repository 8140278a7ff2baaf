package org.rdmashuffle.core.control;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.rdmashuffle.verbs.Trouble;

/**
 * A connection to a peer's {@link ControlServer}: connects, authenticates (or, with no secret,
 * announces itself unauthenticated), then serves blocking {@link #call}s one at a time. Every wait
 * is bounded; a dead peer fails the call with an {@link IOException} naming the peer. Runs on the
 * event loops it is given (a {@link ControlClientPool}'s, shared by all its peers), or on a thread of
 * its own (a daemon) when given none; {@link #close()} is bounded.
 */
public final class ControlClient implements AutoCloseable {
    /** What to change when a peer refuses our application's secret (docs/troubleshooting.md, RS07). */
    private static final String FIX = "the same secret at both ends (spark.authenticate.secret on every node of a standalone "
            + "cluster; on YARN Spark makes one per application and hands it to the NodeManager, whose RDMA service must "
            + "run beside Spark's), and spark.authenticate on or off at both";

    private record Frame(byte kind, byte type, byte[] payload) {
    }

    private static final Frame CLOSED = new Frame((byte) 0, (byte) 0, new byte[0]);
    private static final System.Logger LOG = System.getLogger(ControlClient.class.getName());
    /** Whether this process has said that it met a server of the release before version negotiation. */
    private static final java.util.concurrent.atomic.AtomicBoolean SAID_PREVIOUS_RELEASE =
            new java.util.concurrent.atomic.AtomicBoolean();

    /** An answer did not come within its timeout (the connection still open). */
    private static final class AnswerTimeoutException extends IOException {
        private static final long serialVersionUID = 1L;

        AnswerTimeoutException(String message) {
            super(message);
        }
    }

    private final InetSocketAddress peer;
    private final EventLoopGroup group;
    /** Whether {@link #group} is this client's own, shut down with it. */
    private final boolean ownsGroup;
    private final Channel channel;
    private final LinkedBlockingQueue<Frame> inbox = new LinkedBlockingQueue<>();
    private long lastCallId;
    /** The highest call id answered: below {@link #lastCallId} while a call that timed out is under way at the peer. */
    private long answeredUpTo;
    private long staleReplies;
    /** The control protocol version agreed at the handshake. */
    private int protocolVersion;

    private ControlClient(InetSocketAddress peer, int maxFrameBytes, Duration timeout, java.net.InetAddress local,
                          EventLoopGroup shared) throws IOException {
        this.peer = peer;
        ownsGroup = shared == null;
        group = shared != null ? shared : newGroup(1);
        try {
            channel = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, timeout.toMillis()))
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            QuietEventLoops.keepQuiet(ch.eventLoop());
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(maxFrameBytes, 0, 4, 0, 4),
                                    new LengthFieldPrepender(4), new SimpleChannelInboundHandler<ByteBuf>() {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf f) {
                                            if (f.readableBytes() < 2) {
                                                ctx.close();
                                                return;
                                            }
                                            byte kind = f.readByte();
                                            byte type = f.readByte();
                                            byte[] payload = new byte[f.readableBytes()];
                                            f.readBytes(payload);
                                            inbox.add(new Frame(kind, type, payload));
                                        }

                                        @Override
                                        public void channelInactive(ChannelHandlerContext ctx) {
                                            inbox.add(CLOSED);
                                        }

                                        @Override
                                        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                                            ctx.close();
                                        }
                                    });
                        }
                    }).connect(peer, local == null ? null : new InetSocketAddress(local, 0)).syncUninterruptibly().channel();
        } catch (RuntimeException e) {
            if (ownsGroup) {
                group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            }
            throw new IOException("cannot reach the control plane of " + peer + ": " + e.getMessage(), e);
        }
    }

    /** Event loops for control clients: {@code threads} daemon threads, whatever the number of peers. */
    static EventLoopGroup newGroup(int threads) {
        return QuietEventLoops.of(threads, new DefaultThreadFactory("rdma-control-client", true));
    }

    /**
     * Connects and authenticates for {@code appId} with {@code secret} (null: authentication off).
     *
     * @throws AuthenticationException the peer refused us, or does not know the secret itself
     */
    public static ControlClient connect(InetSocketAddress peer, byte[] secret, String appId, int maxFrameBytes,
                                        Duration timeout) throws IOException {
        return connect(peer, secret, appId, maxFrameBytes, timeout, null);
    }

    /**
     * As {@link #connect(InetSocketAddress, byte[], String, int, Duration)}, from {@code local} (null:
     * any): a software-provider peer dials back only the address our control connection comes from,
     * so it comes from the address our data listener is on.
     */
    public static ControlClient connect(InetSocketAddress peer, byte[] secret, String appId, int maxFrameBytes,
                                        Duration timeout, java.net.InetAddress local) throws IOException {
        return connect(peer, secret, appId, maxFrameBytes, timeout, local, null);
    }

    /** As above, on {@code group}'s event loops (null: a thread of its own). */
    static ControlClient connect(InetSocketAddress peer, byte[] secret, String appId, int maxFrameBytes,
                                 Duration timeout, java.net.InetAddress local, EventLoopGroup group) throws IOException {
        return connect(peer, secret, appId, maxFrameBytes, timeout, local, group, ProtocolVersions.SPOKEN);
    }

    /**
     * As above, offering {@code versions}: the server answers in the highest both speak. A server of
     * the release before negotiation refuses the offer; then, if {@code versions} include the version it
     * speaks ({@link ProtocolVersions#ALONE}), this connects again offering that version alone, as that
     * release's clients do.
     *
     * @throws ProtocolVersionException the server speaks none of {@code versions}; the message names both sides'
     */
    static ControlClient connect(InetSocketAddress peer, byte[] secret, String appId, int maxFrameBytes, Duration timeout,
                                 java.net.InetAddress local, EventLoopGroup group, ProtocolVersions versions) throws IOException {
        try {
            return handshake(peer, secret, appId, maxFrameBytes, timeout, local, group, versions, false);
        } catch (ProtocolVersionException e) {
            if (!e.offerRefusedBeforeNegotiation() || !versions.speaks(ProtocolVersions.ALONE)) {
                throw e;
            }
            ControlClient c = handshake(peer, secret, appId, maxFrameBytes, timeout, local, group, versions, true);
            if (SAID_PREVIOUS_RELEASE.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.INFO, "rdma-shuffle control plane: " + peer + " speaks protocol version "
                        + ProtocolVersions.ALONE + " alone (the release before version negotiation): connected in it, "
                        + "after it refused the offer of " + versions.describe() + " (said once per process)");
            }
            return c;
        }
    }

    /** One connection's handshake: offering {@code versions}, or {@link ProtocolVersions#ALONE} alone. */
    private static ControlClient handshake(InetSocketAddress peer, byte[] secret, String appId, int maxFrameBytes,
                                           Duration timeout, java.net.InetAddress local, EventLoopGroup group,
                                           ProtocolVersions versions, boolean alone) throws IOException {
        ControlClient c = new ControlClient(peer, maxFrameBytes, timeout, local, group);
        byte helloType = versions.helloType(alone);
        try {
            ChallengeResponse.Client auth = null;
            if (secret == null) {
                c.send(ControlFrame.HELLO_UNAUTHENTICATED, helloType,
                        versions.helloPayload(alone, appId.getBytes(StandardCharsets.UTF_8)));
            } else {
                auth = new ChallengeResponse.Client(secret, appId);
                c.send(ControlFrame.HELLO, helloType, versions.helloPayload(alone, auth.hello()));
                Frame challenge = c.await(timeout, "the challenge");
                requireNotBusy(challenge, peer);
                c.protocolVersion = agreedVersion(challenge, peer, versions, alone, 0);
                if (challenge.kind() != ControlFrame.CHALLENGE) {
                    throw new AuthenticationException(Trouble.AUTHENTICATION.line(peer + " refused the handshake for "
                            + "application " + appId + saying(challenge), "the peer to know the application and its secret", FIX));
                }
                c.send(ControlFrame.RESPONSE, (byte) 0, auth.respond(challenge.payload()));
            }
            Frame ok = c.await(timeout, "the handshake's result");
            requireNotBusy(ok, peer);
            c.protocolVersion = agreedVersion(ok, peer, versions, alone, c.protocolVersion);
            if (ok.kind() != ControlFrame.AUTH_OK) {
                throw new AuthenticationException(Trouble.AUTHENTICATION.line(peer + " refused authentication for "
                        + "application " + appId + saying(ok), "the peer to know the application and its secret", FIX));
            }
            if (auth != null) {
                auth.verifyServer(ok.payload()); // the server proves itself only now, to us who proved first
            }
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            Frame first = c.inbox.peek(); // a busy server may have said so and closed before our hello went
            if (!(e instanceof ServerBusyException) && first != null && isBusy(first)) {
                throw new ServerBusyException(String.valueOf(peer));
            }
            if (!(e instanceof ProtocolVersionException) && first != null) {
                // it refused our version and closed, maybe before our await saw the frame
                ProtocolVersionException refused = versionRefusal(first, peer, versions, alone);
                if (refused != null) {
                    throw refused;
                }
            }
            if (e instanceof ControlConnectionLostException) {
                // Nothing said: a server refusing us says why (this release's and the one before) -- but one of an
                // earlier release closes so on a wrong secret too.
                throw new ControlConnectionLostException(peer + " closed the connection during the handshake for application "
                        + appId + " without saying why (a server under load closes the handshakes it cannot finish in time; "
                        + "if it lasts, a server of a release before named refusals refusing the secret: "
                        + Trouble.AUTHENTICATION.code() + ")", e);
            }
            if (e instanceof AnswerTimeoutException) {
                throw new ControlConnectionLostException("the handshake with " + peer + " for application " + appId
                        + " did not finish: " + e.getMessage(), e);
            }
            throw e;
        }
    }

    /** What an ERROR frame says, as " (its words)"; nothing for another frame. */
    private static String saying(Frame f) {
        return f.kind() == ControlFrame.ERROR ? " (" + new String(f.payload(), StandardCharsets.UTF_8) + ")" : "";
    }

    /**
     * The version the server answered in its CHALLENGE or AUTH_OK ({@code earlier}: what its CHALLENGE
     * said, 0 for none), or {@code earlier} for another frame. Throws if the server refused our versions
     * (its ERROR names both sides') or answered one we did not offer.
     */
    private static int agreedVersion(Frame f, InetSocketAddress peer, ProtocolVersions versions, boolean alone, int earlier)
            throws ProtocolVersionException {
        ProtocolVersionException refused = versionRefusal(f, peer, versions, alone);
        if (refused != null) {
            throw refused;
        }
        if (f.kind() != ControlFrame.CHALLENGE && f.kind() != ControlFrame.AUTH_OK) {
            return earlier;
        }
        int answered = f.type() & 0xFF;
        boolean offered = alone ? answered == ProtocolVersions.ALONE : versions.speaks(answered);
        if (!offered || (earlier != 0 && answered != earlier)) {
            String ours = alone ? "version " + ProtocolVersions.ALONE : versions.describe();
            throw new ProtocolVersionException(peer + " answered in " + ProtocolVersions.REFUSAL + " " + answered
                    + (offered ? ", after choosing version " + earlier + " in its challenge"
                    : ", which this client did not offer (it offered " + ours + ")") + ": " + ProtocolVersions.FIX);
        }
        return answered;
    }

    /**
     * The server's refusal of our versions, if {@code f} is one (an ERROR whose text begins as every
     * release's does), else null. A type byte of 0 says a server of a release before negotiation: it
     * refused our offer, and may still speak {@link ProtocolVersions#ALONE} alone.
     */
    private static ProtocolVersionException versionRefusal(Frame f, InetSocketAddress peer, ProtocolVersions versions,
                                                           boolean alone) {
        if (f.kind() != ControlFrame.ERROR) {
            return null;
        }
        String why = new String(f.payload(), StandardCharsets.UTF_8);
        if (!why.startsWith(ProtocolVersions.REFUSAL)) {
            return null;
        }
        return new ProtocolVersionException(peer + " refused the connection, saying \"" + why + "\"; this client offered "
                + (alone ? "version " + ProtocolVersions.ALONE + " alone, after its offer of " + versions.describe() + " was refused"
                : versions.describe()), !alone && f.type() == 0);
    }

    /** A server with too many connections waiting for their handshake says "busy" and closes: ask again later. */
    private static void requireNotBusy(Frame f, InetSocketAddress peer) throws ServerBusyException {
        if (isBusy(f)) {
            throw new ServerBusyException(String.valueOf(peer));
        }
    }

    private static boolean isBusy(Frame f) {
        return f.kind() == ControlFrame.ERROR && ServerBusyException.MESSAGE.equals(new String(f.payload(), StandardCharsets.UTF_8));
    }

    /**
     * Sends a request and waits for its reply; a handler error on the peer becomes an IOException with
     * its message. Replies to earlier calls that timed out are skipped by their call id.
     */
    public synchronized byte[] call(byte type, byte[] payload, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        // A call that timed out may still be under way at the peer, which takes one request at a time
        // per connection (a second closes it, and everything it set up): wait for that reply first.
        while (answeredUpTo < lastCallId) {
            Frame stale = await(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())),
                    "the reply to call " + lastCallId + ", which timed out,");
            long id = replyId(stale, type);
            if (id > lastCallId) {
                throw new IOException(peer + " answered call " + id + ", which was never made");
            }
            answeredUpTo = Math.max(answeredUpTo, id);
            staleReplies++;
        }
        long callId = ++lastCallId;
        send(ControlFrame.REQUEST, type, ControlFrame.withCallId(callId, payload));
        while (true) {
            long left = Math.max(0, deadline - System.nanoTime());
            Frame reply = await(Duration.ofNanos(left), "the reply to request type " + type);
            long id = replyId(reply, type);
            if (id < callId) {
                staleReplies++;
                continue; // the answer to a call that timed out
            }
            if (id != callId || reply.type() != type) {
                throw new IOException(peer + " answered call " + id + " type " + reply.type() + " to call " + callId
                        + " type " + type);
            }
            answeredUpTo = callId;
            byte[] body = java.util.Arrays.copyOfRange(reply.payload(), ControlFrame.CALL_ID_BYTES, reply.payload().length);
            if (reply.kind() == ControlFrame.ERROR) {
                String error = new String(body, StandardCharsets.UTF_8);
                if (error.equals(ServerBusyException.MESSAGE)) {
                    throw new ServerBusyException(String.valueOf(peer), type);
                }
                throw new IOException(peer + " failed request type " + type + ": " + error);
            }
            return body;
        }
    }

    /** The call id a REPLY or ERROR answers; anything else is the peer's mistake. */
    private long replyId(Frame f, byte type) throws IOException {
        if ((f.kind() != ControlFrame.REPLY && f.kind() != ControlFrame.ERROR) || f.payload().length < ControlFrame.CALL_ID_BYTES) {
            throw new IOException(peer + " sent frame kind " + f.kind() + " type " + f.type() + " to request type " + type);
        }
        return ControlFrame.callId(f.payload());
    }

    /** Replies that came after their call had timed out, and were dropped. */
    public synchronized long staleReplies() {
        return staleReplies;
    }

    public boolean isOpen() {
        return channel.isActive();
    }

    /**
     * The control protocol version agreed with the server at the handshake: what this connection's
     * requests, and the data connections they set up, are encoded by (docs/compatibility.md).
     */
    public int protocolVersion() {
        return protocolVersion;
    }

    private void send(byte kind, byte type, byte[] payload) throws IOException {
        if (!channel.isActive()) {
            throw new ControlConnectionLostException("the control connection to " + peer + " is closed");
        }
        channel.writeAndFlush(Unpooled.buffer(2 + payload.length).writeByte(kind).writeByte(type).writeBytes(payload));
    }

    private Frame await(Duration timeout, String what) throws IOException {
        Frame f;
        try {
            f = inbox.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for " + what + " from " + peer, e);
        }
        if (f == null) {
            throw new AnswerTimeoutException(what + " did not come from " + peer + " within " + timeout.toMillis() + " ms");
        }
        if (f == CLOSED) {
            inbox.add(CLOSED); // later calls see it too
            throw new ControlConnectionLostException(peer + " closed the connection while waiting for " + what);
        }
        return f;
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        if (ownsGroup) {
            group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
        }
    }
}
