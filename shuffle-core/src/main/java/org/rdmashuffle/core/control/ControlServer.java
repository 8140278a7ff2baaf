package org.rdmashuffle.core.control;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;
import io.netty.util.concurrent.DefaultThreadFactory;
import org.rdmashuffle.verbs.util.RepeatedWarning;
import org.rdmashuffle.verbs.util.WaitingConnections;

/**
 * One control-plane endpoint per process: a Netty server on which peers authenticate
 * ({@link ChallengeResponse} with their application's secret) before any request reaches the
 * {@link ControlHandler}. Nothing — no rkey, no QP endpoint or admission token — is handed to a
 * connection that has not authenticated. With authentication off (no secrets) it says so once in
 * the log. Threads are daemons; {@link #close()} is bounded.
 *
 * <p>Against a hostile peer: a connection that has not finished the handshake within the handshake
 * timeout is closed, and at most {@value #MAX_UNAUTHENTICATED} wait for theirs at once, at most
 * {@value #MAX_UNAUTHENTICATED_PER_ADDRESS} from one address (more are told "busy" and closed as they
 * come); a connection has at most one request under way (a second one closes it); and requests run
 * on the executor the owner gives, never on the event loop, so a slow request (queue pairs dialling
 * a peer) cannot hold up other peers' handshakes and requests. Closings a peer can repeat are logged
 * once a minute, with a count ({@link RepeatedWarning}).
 */
public final class ControlServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ControlServer.class.getName());
    private static final AtomicBoolean WARNED_UNAUTHENTICATED = new AtomicBoolean();
    /**
     * Connections not yet authenticated, from all peers and from one address: beyond either a new
     * connection is closed at once, so thousands of half-open connections hold a bounded number of
     * sockets, and one address cannot take every place.
     */
    static final int MAX_UNAUTHENTICATED = 1024;
    static final int MAX_UNAUTHENTICATED_PER_ADDRESS = 256;
    /** What a peer is told when its request failed for a reason that is not its to read. */
    static final String FAILED = "the request failed (see the server's log)";

    private final EventLoopGroup group;
    private final Channel channel;
    /** Accepted connections, closed with the server so peers see it at once. */
    private final ChannelGroup connections;
    private final WaitingConnections unauthenticated = new WaitingConnections(MAX_UNAUTHENTICATED,
            MAX_UNAUTHENTICATED_PER_ADDRESS);
    /** Peers decide how often we close their connections: the log says so once a minute, with a count. */
    private final RepeatedWarning closings = new RepeatedWarning(LOG, 60, TimeUnit.SECONDS);
    private final Function<String, byte[]> secrets;
    /** The largest control frame either side of an engine takes (handshakes and CONNECTs are far smaller). */
    public static final int MAX_FRAME_BYTES = 64 << 10;
    private final ControlHandler handler;
    private final RequestScheduler requests;
    private final Admission admission;
    private final Duration handshakeTimeout;
    private final Duration idleTimeout;
    /** Authenticated connections by application, so a stopped application's are closed with it. */
    private final java.util.Map<String, java.util.Set<Channel>> byApplication = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Whether an authenticated connection may stay: the owner's bounds on connections per application,
     * per user and per node, and applications that stopped. A refusal's text goes to the peer.
     */
    public interface Admission {
        /** Null to admit a connection authenticated for {@code app}; else what to tell its peer. */
        String admit(String app);

        /** A connection {@link #admit} admitted has closed. */
        void leave(String app);

        Admission ANY = new Admission() {
            @Override
            public String admit(String app) {
                return null;
            }

            @Override
            public void leave(String app) {
            }
        };
    }

    /**
     * @param secrets the shared secret of an application id, null for an unknown application; a null
     *     function turns authentication off
     * @param maxFrameBytes frames over this size close the connection
     */
    public ControlServer(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int maxFrameBytes) {
        this(bind, secrets, handler, maxFrameBytes, RequestScheduler.INLINE, Duration.ofSeconds(30), Duration.ofMinutes(10),
                Admission.ANY);
    }

    /**
     * @param requests where requests are handled (bounded: a refused request is answered "busy");
     *     {@link RequestScheduler#INLINE} handles them on the event loop
     * @param handshakeTimeout how long a new connection has to authenticate
     * @param idleTimeout how long a connection may go without a request answered while it holds
     *     nothing (no data connection hangs on it): refused and failed requests do not count
     * @param admission who may stay once authenticated
     */
    public ControlServer(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int maxFrameBytes,
                         RequestScheduler requests, Duration handshakeTimeout, Duration idleTimeout, Admission admission) {
        this.secrets = secrets;
        this.handler = handler;
        this.requests = requests;
        this.handshakeTimeout = handshakeTimeout;
        this.idleTimeout = idleTimeout;
        this.admission = admission;
        if (secrets == null && WARNED_UNAUTHENTICATED.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.WARNING, "rdma-shuffle control plane: authentication is OFF -- any peer that can "
                    + "reach " + bind + " may fetch shuffle data (enable spark.authenticate)");
        }
        group = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("rdma-control-server", true),
                NioIoHandler.newFactory());
        connections = new DefaultChannelGroup("rdma-control-connections", group.next());
        try {
            channel = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            java.net.InetAddress from = ch.remoteAddress().getAddress();
                            WaitingConnections.Place place = unauthenticated.enter(from, ch::close);
                            if (place.refusal() != null) {
                                closings.warn("rdma-shuffle control plane: closing " + ch.remoteAddress() + " at once: "
                                        + place.refusal());
                                // Told "busy", not just closed: a peer of ours asks again later, as after a busy reply.
                                ch.pipeline().addLast(new LengthFieldPrepender(4), new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void channelActive(ChannelHandlerContext ctx) {
                                        ctx.writeAndFlush(Unpooled.buffer().writeByte(ControlFrame.ERROR).writeByte(0)
                                                .writeBytes(ServerBusyException.MESSAGE.getBytes(StandardCharsets.UTF_8)))
                                                .addListener(ChannelFutureListener.CLOSE);
                                    }
                                });
                                return;
                            }
                            connections.add(ch);
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(maxFrameBytes, 0, 4, 0, 4),
                                    new LengthFieldPrepender(4), new Session(() -> unauthenticated.leave(place)));
                        }
                    }).bind(bind).syncUninterruptibly().channel();
        } catch (Exception e) { // Netty rethrows the checked BindException undeclared
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            // Netty's BindException names neither the address nor the port: the operator needs both.
            throw new IllegalStateException("rdma-shuffle control plane cannot listen on "
                    + (bind.getAddress() != null ? bind.getAddress().getHostAddress() : bind.getHostString()) + ":"
                    + bind.getPort() + " (" + e.getMessage() + "): "
                    + (String.valueOf(e.getMessage()).contains("in use") ? "another process has that port; choose another "
                    + "controlPort or 0 for any" : "is that address one of this host's? (bindAddress)"), e);
        }
    }

    public InetSocketAddress address() {
        return (InetSocketAddress) channel.localAddress();
    }

    /** Connections accepted and not yet authenticated (tests watch it). */
    int unauthenticatedConnections() {
        return unauthenticated.total();
    }

    /**
     * A connection's handler as the server installs it after the frame decoder, for a test channel
     * (Netty's EmbeddedChannel): the fuzz tests feed it whatever bytes a peer could send.
     */
    io.netty.channel.ChannelHandler newSessionForTests() {
        return new Session(() -> { });
    }

    /** Connections closed by the server (and how many of those were logged at WARNING). */
    RepeatedWarning closings() {
        return closings;
    }

    /**
     * Closes every authenticated connection of {@code app} (its application stopped): the data
     * connections set up on them end with them. Returns at once.
     */
    public void closeConnections(String app) {
        java.util.Set<Channel> of = byApplication.get(app);
        if (of != null) {
            of.forEach(Channel::close);
        }
    }

    /** Authenticated connections of {@code app} open now. */
    public int connections(String app) {
        java.util.Set<Channel> of = byApplication.get(app);
        return of == null ? 0 : of.size();
    }

    /** One connection: handshake first, then requests. Event loop only. */
    private final class Session extends SimpleChannelInboundHandler<ByteBuf> {
        /** When a request was last answered (or the handshake done): what the idle timeout counts from. */
        private long lastAnsweredNanos = System.nanoTime();
        private java.util.concurrent.ScheduledFuture<?> idleCheck;
        private ChallengeResponse.Server auth;
        private String appId;
        /** Counted by the admission: left when the connection closes. */
        private boolean admitted;
        private ControlSession session;
        /** A request is being handled (event loop only). */
        private boolean busy;
        /** Gives this connection's place among the unauthenticated back; run once (event loop only). */
        private Runnable authenticatedOrGone;

        Session(Runnable authenticatedOrGone) {
            this.authenticatedOrGone = authenticatedOrGone;
        }

        private void leaveUnauthenticated() {
            if (authenticatedOrGone != null) {
                authenticatedOrGone.run();
                authenticatedOrGone = null;
            }
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.executor().schedule(() -> {
                if (appId == null && ctx.channel().isActive()) {
                    refuse(ctx, "no handshake within " + handshakeTimeout.toMillis() + " ms");
                }
            }, handshakeTimeout.toMillis(), TimeUnit.MILLISECONDS);
            long period = Math.max(1, idleTimeout.toMillis() / 2);
            idleCheck = ctx.executor().scheduleAtFixedRate(() -> {
                boolean holds = session != null && session.holdsResources();
                // Before authentication the handshake timeout applies; after it, no request answered while holding nothing.
                if (appId != null && !busy && !holds && System.nanoTime() - lastAnsweredNanos > idleTimeout.toNanos()
                        && ctx.channel().isActive()) {
                    refuse(ctx, "no request answered for " + idleTimeout.toMillis() + " ms with no data connection");
                }
            }, period, period, TimeUnit.MILLISECONDS);
            ctx.fireChannelActive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            if (frame.readableBytes() < 2) {
                refuse(ctx, "malformed frame");
                return;
            }
            byte kind = frame.readByte();
            byte type = frame.readByte();
            byte[] payload = new byte[frame.readableBytes()];
            frame.readBytes(payload);
            try {
                switch (kind) {
                    case ControlFrame.HELLO -> {
                        if (type != ControlFrame.PROTOCOL_VERSION) {
                            refuseTelling(ctx, ControlFrame.versionRefusal(type));
                            return;
                        }
                        if (secrets == null || auth != null || appId != null) {
                            refuse(ctx, secrets == null ? "authentication is off here" : "second hello");
                            return;
                        }
                        // Challenged alike whether the application is served here or not: it fails at the response.
                        auth = new ChallengeResponse.Server(secrets.apply(ChallengeResponse.appIdOf(payload)));
                        send(ctx, ControlFrame.CHALLENGE, ControlFrame.PROTOCOL_VERSION, auth.challenge(payload));
                    }
                    case ControlFrame.RESPONSE -> {
                        if (auth == null || appId != null) {
                            refuse(ctx, auth == null ? "response before hello" : "second response");
                            return;
                        }
                        auth.verify(payload);
                        if (authenticated(ctx, auth.appId())) {
                            send(ctx, ControlFrame.AUTH_OK, ControlFrame.PROTOCOL_VERSION, auth.proof());
                        }
                    }
                    case ControlFrame.HELLO_UNAUTHENTICATED -> {
                        if (type != ControlFrame.PROTOCOL_VERSION) {
                            refuseTelling(ctx, ControlFrame.versionRefusal(type));
                            return;
                        }
                        if (secrets != null || appId != null) {
                            refuse(ctx, "authentication is required");
                            return;
                        }
                        if (payload.length > ChallengeResponse.MAX_APP_ID) {
                            refuse(ctx, "an application id of " + payload.length + " bytes");
                            return;
                        }
                        if (authenticated(ctx, new String(payload, StandardCharsets.UTF_8))) {
                            send(ctx, ControlFrame.AUTH_OK, ControlFrame.PROTOCOL_VERSION, new byte[0]);
                        }
                    }
                    case ControlFrame.REQUEST -> {
                        if (appId == null) {
                            refuse(ctx, "request before authentication");
                            return;
                        }
                        if (payload.length < ControlFrame.CALL_ID_BYTES) {
                            refuse(ctx, "a request without a call id");
                            return;
                        }
                        if (busy) { // the client waits for each reply: a pipelining peer is not one of ours
                            refuse(ctx, "a second request while one is under way");
                            return;
                        }
                        long callId = ControlFrame.callId(payload);
                        byte[] request = java.util.Arrays.copyOfRange(payload, ControlFrame.CALL_ID_BYTES, payload.length);
                        if (session == null) {
                            session = new ControlSession(appId, ctx.channel().remoteAddress());
                        }
                        ControlSession s = session;
                        busy = true;
                        if (!requests.submit(appId, () -> handle(ctx, s, type, callId, request))) {
                            busy = false;
                            send(ctx, ControlFrame.ERROR, type, ControlFrame.withCallId(callId,
                                    ServerBusyException.MESSAGE.getBytes(StandardCharsets.UTF_8)));
                        }
                    }
                    default -> refuse(ctx, "unknown frame kind " + kind);
                }
            } catch (AuthenticationException e) {
                refuse(ctx, e.getMessage());
            }
        }

        /**
         * The peer proved it holds {@code app}'s secret (or authentication is off): admitted, unless the
         * owner's bounds say no, in which case the peer is told why and the connection closed.
         */
        private boolean authenticated(ChannelHandlerContext ctx, String app) {
            leaveUnauthenticated();
            String refused = admission.admit(app);
            if (refused != null) {
                refuseTelling(ctx, refused);
                return false;
            }
            admitted = true;
            appId = app;
            lastAnsweredNanos = System.nanoTime();
            byApplication.computeIfAbsent(app, a -> java.util.concurrent.ConcurrentHashMap.newKeySet()).add(ctx.channel());
            return true;
        }

        /**
         * Runs one request on the request executor; the reply is sent from the event loop. Only a refusal
         * meant for the peer ({@link RequestRefusedException}) reaches it in words; any other failure is
         * logged here and reaches it as a fixed phrase.
         */
        private void handle(ChannelHandlerContext ctx, ControlSession s, byte type, long callId, byte[] request) {
            byte kind;
            byte[] body;
            try {
                body = handler.handle(s, type, request);
                kind = ControlFrame.REPLY;
            } catch (RequestRefusedException e) {
                body = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
                kind = ControlFrame.ERROR;
            } catch (Throwable e) {
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle control plane: request type " + type + " of " + s.appId()
                        + " from " + s.remoteAddress() + " failed", e);
                body = FAILED.getBytes(StandardCharsets.UTF_8);
                kind = ControlFrame.ERROR;
            }
            byte replyKind = kind;
            byte[] reply = ControlFrame.withCallId(callId, body);
            try {
                ctx.executor().execute(() -> {
                    busy = false;
                    if (replyKind == ControlFrame.REPLY) {
                        lastAnsweredNanos = System.nanoTime(); // refusals keep nobody's connection alive
                    }
                    send(ctx, replyKind, type, reply);
                });
            } catch (RejectedExecutionException closing) {
                // the server is closing: the peer learns it from the connection's end
            }
        }

        private void refuse(ChannelHandlerContext ctx, String why) {
            closings.warn("rdma-shuffle control plane: closing " + ctx.channel().remoteAddress() + ": " + why);
            ctx.close();
        }

        /** As {@link #refuse}, telling the peer why first (an ERROR frame): for what an honest peer may meet. */
        private void refuseTelling(ChannelHandlerContext ctx, String why) {
            closings.warn("rdma-shuffle control plane: closing " + ctx.channel().remoteAddress() + ": " + why);
            ctx.writeAndFlush(Unpooled.buffer(2 + why.length()).writeByte(ControlFrame.ERROR).writeByte(0)
                    .writeBytes(why.getBytes(StandardCharsets.UTF_8))).addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            leaveUnauthenticated();
            if (idleCheck != null) {
                idleCheck.cancel(false);
            }
            if (admitted) {
                admitted = false;
                java.util.Set<Channel> of = byApplication.get(appId);
                if (of != null) {
                    of.remove(ctx.channel());
                    if (of.isEmpty()) {
                        byApplication.remove(appId, of);
                    }
                }
                admission.leave(appId);
            }
            if (session != null) {
                session.closed();
            }
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            refuse(ctx, String.valueOf(cause.getMessage())); // e.g. a frame over the size bound
        }
    }

    static void send(ChannelHandlerContext ctx, byte kind, byte type, byte[] payload) {
        ByteBuf out = Unpooled.buffer(2 + payload.length).writeByte(kind).writeByte(type).writeBytes(payload);
        ctx.writeAndFlush(out);
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        connections.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
    }
}
