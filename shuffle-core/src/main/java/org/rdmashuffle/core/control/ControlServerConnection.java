package org.rdmashuffle.core.control;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;

/**
 * One connection of a {@link ControlServer}: the handshake first (a challenge on the application's
 * secret, or the application named where authentication is off), then its server.admission by the owner's
 * bounds, then server.requests, one at a time, run on the server's request scheduler and answered from the
 * event loop. Closed by the server when the handshake does not come in time, when it idles holding
 * nothing, or on anything an honest peer does not send. Event loop only, but for {@link #handle}.
 *
 * <p>Both timeouts are deadlines, not sweeps: the handshake's timer is cancelled at authentication,
 * and the idle check is one timer set for when the connection would have idled out, set again only
 * while it has a reason to look (a request answered since, or nothing held any more). A connection
 * holding a data connection has no timer at all, so connections at rest wake the event loop for
 * nothing, however many there are (issue 52 item 7).
 */
final class ControlServerConnection extends SimpleChannelInboundHandler<ByteBuf> {
    private static final System.Logger LOG = System.getLogger(ControlServer.class.getName());
    /**
     * What a peer that fails the handshake is told, whatever failed (a wrong proof, an application not
     * served here alike: the words tell nothing the refusal itself does not).
     */
    static final String AUTHENTICATION_FAILED = "authentication failed: a wrong secret, or an application not served here";
    private final ControlServer server;
    /** When a request was last answered (or the handshake done): what the idle timeout counts from. */
    private long lastAnsweredNanos = System.nanoTime();
    /** The handshake's deadline until authentication (or the end), then null. */
    private java.util.concurrent.ScheduledFuture<?> handshakeDeadline;
    /** The pending idle check, or null while there is none (before authentication, while busy or holding). */
    private java.util.concurrent.ScheduledFuture<?> idleCheck;
    private ChallengeResponse.Server auth;
    private String appId;
    /** Counted by the server.admission: left when the connection closes. */
    private boolean admitted;
    private ControlSession session;
    /** The control protocol version agreed at the HELLO (0 before). */
    private int version;
    /** A request is being handled (event loop only). */
    private boolean busy;
    /** Gives this connection's place among the unauthenticated back; run once (event loop only). */
    private Runnable authenticatedOrGone;

    ControlServerConnection(ControlServer server, Runnable authenticatedOrGone) {
        this.server = server;
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
        handshakeDeadline = ctx.executor().schedule(() -> {
            handshakeDeadline = null;
            if (appId == null && ctx.channel().isActive()) {
                refuse(ctx, "no handshake within " + server.handshakeTimeout.toMillis() + " ms");
            }
        }, server.handshakeTimeout.toMillis(), TimeUnit.MILLISECONDS);
        ctx.fireChannelActive();
    }

    /**
     * Sets the idle check for when the connection would have gone {@code idleTimeout} without a request
     * answered, unless one is set already (it looks again when it runs). Event loop; after authentication.
     */
    private void armIdleCheck(ChannelHandlerContext ctx) {
        if (idleCheck != null || appId == null || !ctx.channel().isActive()) {
            return;
        }
        long left = lastAnsweredNanos + server.idleTimeout.toNanos() - System.nanoTime();
        idleCheck = ctx.executor().schedule(() -> idleCheck(ctx), Math.max(0, left) + 1, TimeUnit.NANOSECONDS);
    }

    /**
     * No request answered for the idle timeout while holding nothing: closed. Busy, the reply sets the
     * check again; holding a data connection, the last one's end does ({@link ControlSession#whenNothingHeld}).
     */
    private void idleCheck(ChannelHandlerContext ctx) {
        idleCheck = null;
        if (busy || (session != null && session.holdsResources()) || !ctx.channel().isActive()) {
            return;
        }
        if (System.nanoTime() - lastAnsweredNanos > server.idleTimeout.toNanos()) {
            refuse(ctx, "no request answered for " + server.idleTimeout.toMillis() + " ms with no data connection");
        } else {
            armIdleCheck(ctx); // a request was answered since it was set
        }
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
                    Agreed agreed = agree(ctx, type, payload);
                    if (agreed == null) {
                        return;
                    }
                    if (server.secrets == null) {
                        refuseTelling(ctx, "authentication is off here"); // named: a client asks again only after a silent close
                        return;
                    }
                    if (auth != null || appId != null) {
                        refuse(ctx, "second hello");
                        return;
                    }
                    version = agreed.version();
                    // Challenged alike whether the application is served here or not: it fails at the response.
                    auth = new ChallengeResponse.Server(server.secrets.apply(ChallengeResponse.appIdOf(agreed.hello())));
                    ControlServer.send(ctx, ControlFrame.CHALLENGE, (byte) version, auth.challenge(agreed.hello()));
                }
                case ControlFrame.RESPONSE -> {
                    if (auth == null || appId != null) {
                        refuse(ctx, auth == null ? "response before hello" : "second response");
                        return;
                    }
                    auth.verify(payload);
                    if (authenticated(ctx, auth.appId())) {
                        ControlServer.send(ctx, ControlFrame.AUTH_OK, (byte) version, auth.proof());
                    }
                }
                case ControlFrame.HELLO_UNAUTHENTICATED -> {
                    Agreed agreed = agree(ctx, type, payload);
                    if (agreed == null) {
                        return;
                    }
                    if (server.secrets != null) {
                        refuseTelling(ctx, "authentication is required");
                        return;
                    }
                    if (appId != null) {
                        refuse(ctx, "second hello");
                        return;
                    }
                    byte[] app = agreed.hello();
                    if (app.length > ChallengeResponse.MAX_APP_ID) {
                        refuse(ctx, "an application id of " + app.length + " bytes");
                        return;
                    }
                    version = agreed.version();
                    if (authenticated(ctx, new String(app, StandardCharsets.UTF_8))) {
                        ControlServer.send(ctx, ControlFrame.AUTH_OK, (byte) version, new byte[0]);
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
                        session = new ControlSession(appId, ctx.channel().remoteAddress(), version);
                        session.whenNothingHeld(() -> {
                            try {
                                ctx.executor().execute(() -> armIdleCheck(ctx));
                            } catch (RejectedExecutionException closing) {
                                // the server is closing: so is this connection
                            }
                        });
                    }
                    ControlSession s = session;
                    busy = true;
                    if (!server.requests.submit(appId, () -> handle(ctx, s, type, callId, request))) {
                        busy = false;
                        ControlServer.send(ctx, ControlFrame.ERROR, type, ControlFrame.withCallId(callId,
                                ServerBusyException.MESSAGE.getBytes(StandardCharsets.UTF_8)));
                    }
                }
                default -> refuse(ctx, "unknown frame kind " + kind);
            }
        } catch (AuthenticationException e) {
            // Named, so the client does not ask again (it does after a silent close: a handshake timed out under
            // load); the same words whatever failed, so they tell nothing a close would not.
            refuseTelling(ctx, e.getMessage(), AUTHENTICATION_FAILED, (byte) 0);
        }
    }

    /** A version both ends speak, and the HELLO's own payload (after the client's offer). */
    private record Agreed(int version, byte[] hello) {
    }

    /**
     * Reads a HELLO's offer and chooses the highest version both ends speak; null when there is none
     * or the offer is malformed, the peer told why (a client of a release more than one apart meets this).
     */
    private Agreed agree(ChannelHandlerContext ctx, byte type, byte[] payload) {
        ProtocolVersions.Offer offer;
        try {
            offer = ProtocolVersions.Offer.read(type, payload);
        } catch (IllegalArgumentException malformed) {
            refuseTelling(ctx, malformed.getMessage(), (byte) 0);
            return null;
        }
        int chosen = server.versions.choose(offer);
        if (chosen < 0) {
            // The type byte says a server that negotiates refused: the client must not retry with one version alone.
            refuseTelling(ctx, server.versions.refusal(offer), (byte) server.versions.highest());
            return null;
        }
        return new Agreed(chosen, offer.body(payload));
    }

    /**
     * The peer proved it holds {@code app}'s secret (or authentication is off): admitted, unless the
     * owner's bounds say no, in which case the peer is told why and the connection closed.
     */
    private boolean authenticated(ChannelHandlerContext ctx, String app) {
        leaveUnauthenticated();
        String refused = server.admission.admit(app);
        if (refused != null) {
            refuseTelling(ctx, refused);
            return false;
        }
        admitted = true;
        appId = app;
        lastAnsweredNanos = System.nanoTime();
        server.byApplication.computeIfAbsent(app, a -> java.util.concurrent.ConcurrentHashMap.newKeySet()).add(ctx.channel());
        if (handshakeDeadline != null) {
            handshakeDeadline.cancel(false); // met: its timer goes, not one wake-up per connection later
            handshakeDeadline = null;
        }
        armIdleCheck(ctx);
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
        String violation = null;
        try {
            body = server.handler.handle(s, type, request);
            kind = ControlFrame.REPLY;
        } catch (RequestRefusedException e) {
            body = String.valueOf(e.getMessage()).getBytes(StandardCharsets.UTF_8);
            kind = ControlFrame.ERROR;
        } catch (ProtocolViolationException e) { // no honest peer sends it: told, and closed below
            violation = e.getMessage();
            body = String.valueOf(violation).getBytes(StandardCharsets.UTF_8);
            kind = ControlFrame.ERROR;
        } catch (Throwable e) {
            // A peer may repeat whatever made a handler throw: once a minute with its stack, the rest counted.
            long before = server.failedRequests.warnings();
            server.failedRequests.warn("rdma-shuffle control plane: request type " + type + " of " + s.appId() + " from "
                    + s.remoteAddress() + " failed: " + e);
            if (server.failedRequests.warnings() != before) {
                LOG.log(System.Logger.Level.WARNING, "rdma-shuffle control plane: what the request's handler threw", e);
            }
            body = ControlServer.FAILED.getBytes(StandardCharsets.UTF_8);
            kind = ControlFrame.ERROR;
        }
        byte replyKind = kind;
        byte[] reply = ControlFrame.withCallId(callId, body);
        String closeFor = violation;
        try {
            ctx.executor().execute(() -> {
                busy = false;
                if (closeFor != null) {
                    server.closings.warn("rdma-shuffle control plane: closing " + ctx.channel().remoteAddress() + " ("
                            + s.appId() + "): " + closeFor);
                    ControlServer.send(ctx, replyKind, type, reply).addListener(ChannelFutureListener.CLOSE);
                    return;
                }
                if (replyKind == ControlFrame.REPLY) {
                    lastAnsweredNanos = System.nanoTime(); // refusals keep nobody's connection alive
                }
                ControlServer.send(ctx, replyKind, type, reply);
                armIdleCheck(ctx); // none was set while busy; a set one looks again when it runs
            });
        } catch (RejectedExecutionException closing) {
            // the server is closing: the peer learns it from the connection's end
        }
    }

    private void refuse(ChannelHandlerContext ctx, String why) {
        server.closings.warn("rdma-shuffle control plane: closing " + ctx.channel().remoteAddress() + ": " + why);
        ctx.close();
    }

    /**
     * As {@link #refuse}, telling the peer why first (an ERROR frame): for what an honest peer may meet.
     * A client takes a refusal so named as final; a close without a word it may ask again after.
     */
    private void refuseTelling(ChannelHandlerContext ctx, String why) {
        refuseTelling(ctx, why, (byte) 0);
    }

    /** As above, the ERROR's type byte {@code type} (0 but for a refusal about versions: see {@link ProtocolVersions}). */
    private void refuseTelling(ChannelHandlerContext ctx, String why, byte type) {
        refuseTelling(ctx, why, why, type);
    }

    /** As above, logging {@code why} and telling the peer {@code told}. */
    private void refuseTelling(ChannelHandlerContext ctx, String why, String told, byte type) {
        server.closings.warn("rdma-shuffle control plane: closing " + ctx.channel().remoteAddress() + ": " + why);
        byte[] words = told.getBytes(StandardCharsets.UTF_8);
        ctx.writeAndFlush(Unpooled.buffer(2 + words.length).writeByte(ControlFrame.ERROR).writeByte(type)
                .writeBytes(words)).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        leaveUnauthenticated();
        if (handshakeDeadline != null) {
            handshakeDeadline.cancel(false);
            handshakeDeadline = null;
        }
        if (idleCheck != null) {
            idleCheck.cancel(false);
            idleCheck = null;
        }
        if (admitted) {
            admitted = false;
            java.util.Set<Channel> of = server.byApplication.get(appId);
            if (of != null) {
                of.remove(ctx.channel());
                if (of.isEmpty()) {
                    server.byApplication.remove(appId, of);
                }
            }
            server.admission.leave(appId);
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
