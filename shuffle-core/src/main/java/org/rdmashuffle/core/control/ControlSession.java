package org.rdmashuffle.core.control;

import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * One authenticated control connection, as its handler sees it: which application it authenticated
 * for, where it comes from, and hooks run when it closes (the data connections it set up end with
 * it, so a peer that goes away leaves nothing behind).
 */
public final class ControlSession {
    /** The first control protocol version whose data connections carry held answers and their releases. */
    public static final int HELD_ANSWERS = ProtocolVersions.HELD_ANSWERS;

    private final String appId;
    private final SocketAddress remote;
    private final int protocolVersion;
    private final List<Runnable> onClose = new ArrayList<>();
    private boolean closed;
    /** Run when the last hook is taken back (nothing ends with the connection any more): its idle deadline starts. */
    private Runnable nothingHeld = () -> { };

    ControlSession(String appId, SocketAddress remote, int protocolVersion) {
        this.appId = appId;
        this.remote = remote;
        this.protocolVersion = protocolVersion;
    }

    public String appId() {
        return appId;
    }

    public SocketAddress remoteAddress() {
        return remote;
    }

    /**
     * The control protocol version agreed with the peer at the handshake: what the requests of this
     * connection, and the data connections they set up, are encoded by (docs/compatibility.md).
     */
    public int protocolVersion() {
        return protocolVersion;
    }

    /** Runs {@code hook} when the connection closes (at once if it already has). */
    public void onClose(Runnable hook) {
        synchronized (this) {
            if (!closed) {
                onClose.add(hook);
                return;
            }
        }
        hook.run();
    }

    /** Takes back a hook not yet run: what it would end has ended otherwise. */
    public void cancelOnClose(Runnable hook) {
        Runnable idle;
        synchronized (this) {
            if (!onClose.remove(hook) || !onClose.isEmpty() || closed) {
                return;
            }
            idle = nothingHeld;
        }
        idle.run();
    }

    /** Sets what runs when the connection stops holding anything (the server's connection arms its idle check). */
    synchronized void whenNothingHeld(Runnable r) {
        nothingHeld = r;
    }

    /** Whether something (a data connection) ends with this connection: then it is not idle, however silent. */
    synchronized boolean holdsResources() {
        return !onClose.isEmpty();
    }

    void closed() {
        List<Runnable> hooks;
        synchronized (this) {
            closed = true;
            hooks = new ArrayList<>(onClose);
            onClose.clear();
        }
        hooks.forEach(Runnable::run);
    }
}
