package org.rdmashuffle.core.control;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
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
 * once a minute, with a count ({@link RepeatedWarning}). Each connection is a
 * {@link ControlServerConnection}; this class listens, bounds and closes.
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
    final RepeatedWarning closings = new RepeatedWarning(LOG, 60, TimeUnit.SECONDS);
    /** Requests whose handler threw: a peer may repeat what made it throw, so likewise once a minute. */
    final RepeatedWarning failedRequests = new RepeatedWarning(LOG, 60, TimeUnit.SECONDS);
    final Function<String, byte[]> secrets;
    /** The largest control frame either side of an engine takes (handshakes and CONNECTs are far smaller). */
    public static final int MAX_FRAME_BYTES = 64 << 10;
    final ControlHandler handler;
    final RequestScheduler requests;
    final Admission admission;
    final Duration handshakeTimeout;
    final Duration idleTimeout;
    /** The control protocol versions this server speaks; it answers each client in the highest both speak. */
    final ProtocolVersions versions;
    /** Authenticated connections by application, so a stopped application's are closed with it. */
    final java.util.Map<String, java.util.Set<Channel>> byApplication = new java.util.concurrent.ConcurrentHashMap<>();

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
        this(bind, secrets, handler, maxFrameBytes, requests, handshakeTimeout, idleTimeout, admission, ProtocolVersions.SPOKEN);
    }

    /** As above, speaking {@code versions} (tests: a server of another release). */
    ControlServer(InetSocketAddress bind, Function<String, byte[]> secrets, ControlHandler handler, int maxFrameBytes,
                  RequestScheduler requests, Duration handshakeTimeout, Duration idleTimeout, Admission admission,
                  ProtocolVersions versions) {
        this.versions = versions;
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
        group = QuietEventLoops.of(1, new DefaultThreadFactory("rdma-control-server", true));
        connections = new DefaultChannelGroup("rdma-control-connections", group.next());
        try {
            channel = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            QuietEventLoops.keepQuiet(ch.eventLoop());
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
                                    new LengthFieldPrepender(4), new ControlServerConnection(ControlServer.this, () -> unauthenticated.leave(place)));
                        }
                    }).bind(bind).syncUninterruptibly().channel();
            QuietEventLoops.keepQuiet(channel.eventLoop()); // the listening channel's loop, before any connection
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
        return new ControlServerConnection(this, () -> { });
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

    static io.netty.channel.ChannelFuture send(ChannelHandlerContext ctx, byte kind, byte type, byte[] payload) {
        ByteBuf out = Unpooled.buffer(2 + payload.length).writeByte(kind).writeByte(type).writeBytes(payload);
        return ctx.writeAndFlush(out);
    }

    @Override
    public void close() {
        channel.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        connections.close().awaitUninterruptibly(2, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(3, TimeUnit.SECONDS);
    }
}
