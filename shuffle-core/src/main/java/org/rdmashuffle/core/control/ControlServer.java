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

    private final EventLoopGroup group;
    private final Channel channel;
    /** Accepted connections, closed with the server so peers see it at once. */
    private final ChannelGroup connections;
    private final WaitingConnections unauthenticated = new WaitingConnections(MAX_UNAUTHENTICATED,
            MAX_UNAUTHENTICATED_PER_ADDRESS);
    /** Peers decide how often we close their connections: the log says so once a minute, with a count. */
    private final RepeatedWarning closings = new RepeatedWarning(LOG, 60, TimeUnit.SECONDS);

    /**
     * @param secrets the shared secret of an application id, null for an unknown application; a null
     *     function turns authentication off
     * @param maxFrameBytes frames over this size close the connection
     */
    public ControlServer(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int maxFrameBytes) {
        this(bind, secrets, handler, maxFrameBytes, RequestScheduler.INLINE, Duration.ofSeconds(30), Duration.ofMinutes(10));
    }

    /**
     * @param requests where requests are handled (bounded: a refused request is answered "busy");
     *     {@link RequestScheduler#INLINE} handles them on the event loop
     * @param handshakeTimeout how long a new connection has to authenticate
     * @param idleTimeout how long a connection may stay silent while it holds nothing (no data
     *     connection hangs on it)
     */
    public ControlServer(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int maxFrameBytes,
                         RequestScheduler requests, Duration handshakeTimeout, Duration idleTimeout) {
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
                            String full = unauthenticated.enter(from);
                            if (full != null) {
                                closings.warn("rdma-shuffle control plane: closing " + ch.remoteAddress() + " at once: " + full);
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
                                    new LengthFieldPrepender(4), new Session(secrets, handler, requests, handshakeTimeout,
                                            idleTimeout, () -> unauthenticated.leave(from), closings));
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

    /** Connections closed by the server (and how many of those were logged at WARNING). */
    RepeatedWarning closings() {
        return closings;
    }

    /** One connection: handshake first, then requests. */
    private static final class Session extends SimpleChannelInboundHandler<ByteBuf> {
        private final Function<String, byte[]> secrets;
        private final ControlHandler handler;
        private final RequestScheduler requests;
        private final Duration handshakeTimeout;
        private final Duration idleTimeout;
        private long lastFrameNanos = System.nanoTime();
        private java.util.concurrent.ScheduledFuture<?> idleCheck;
        private ChallengeResponse.Server auth;
        private String appId;
        private ControlSession session;
        /** A request is being handled (event loop only). */
        private boolean busy;
        /** Gives this connection's place among the unauthenticated back; run once (event loop only). */
        private Runnable authenticatedOrGone;
        private final RepeatedWarning closings;

        Session(Function<String, byte[]> secrets, ControlHandler handler, RequestScheduler requests, Duration handshakeTimeout,
                Duration idleTimeout, Runnable authenticatedOrGone, RepeatedWarning closings) {
            this.secrets = secrets;
            this.handler = handler;
            this.requests = requests;
            this.handshakeTimeout = handshakeTimeout;
            this.idleTimeout = idleTimeout;
            this.authenticatedOrGone = authenticatedOrGone;
            this.closings = closings;
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
                // Before authentication the handshake timeout applies; after it, silence while holding nothing.
                if (appId != null && !busy && !holds && System.nanoTime() - lastFrameNanos > idleTimeout.toNanos()
                        && ctx.channel().isActive()) {
                    refuse(ctx, "idle for " + idleTimeout.toMillis() + " ms with no data connection");
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
            lastFrameNanos = System.nanoTime();
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
                        String app = ChallengeResponse.appIdOf(payload);
                        byte[] secret = secrets.apply(app);
                        if (secret == null) {
                            refuse(ctx, "unknown application " + app);
                            return;
                        }
                        auth = new ChallengeResponse.Server(secret);
                        send(ctx, ControlFrame.CHALLENGE, ControlFrame.PROTOCOL_VERSION, auth.challenge(payload));
                    }
                    case ControlFrame.RESPONSE -> {
                        if (auth == null) {
                            refuse(ctx, "response before hello");
                            return;
                        }
                        auth.verify(payload);
                        appId = auth.appId();
                        leaveUnauthenticated();
                        send(ctx, ControlFrame.AUTH_OK, ControlFrame.PROTOCOL_VERSION, new byte[0]);
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
                        appId = new String(payload, StandardCharsets.UTF_8);
                        leaveUnauthenticated();
                        send(ctx, ControlFrame.AUTH_OK, ControlFrame.PROTOCOL_VERSION, new byte[0]);
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

        /** Runs one request on the request executor; the reply is sent from the event loop. */
        private void handle(ChannelHandlerContext ctx, ControlSession s, byte type, long callId, byte[] request) {
            byte kind;
            byte[] body;
            try {
                body = handler.handle(s, type, request);
                kind = ControlFrame.REPLY;
            } catch (Exception e) {
                body = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
                kind = ControlFrame.ERROR;
            }
            byte replyKind = kind;
            byte[] reply = ControlFrame.withCallId(callId, body);
            try {
                ctx.executor().execute(() -> {
                    busy = false;
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

        /** As {@link #refuse}, telling the peer why first (an ERROR frame): for what an honest peer of another release does. */
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
