package org.rdmashuffle.core.client;

import java.io.IOException;
import java.util.List;

import org.rdmashuffle.core.protocol.BlockId;

/**
 * Blocks could not be fetched from a peer; the message names the peer, the blocks and the cause, and
 * {@link #kind()} says what a caller can do about it.
 */
public final class BlockFetchException extends IOException {
    private static final long serialVersionUID = 1L;

    /** What went wrong, as far as a caller choosing what to do next cares. */
    public enum Kind {
        /** Nobody answered at the peer's control address (nothing listening, host down, network): another transport may reach it. */
        UNREACHABLE,
        /** The peer answered but refused the handshake (wrong secret, an application it does not know). */
        NOT_AUTHENTICATED,
        /** The peer has no such map output (never written there, lost, or its application forgotten): the map must be re-run. */
        NO_SUCH_OUTPUT,
        /** The peer has the output but will not serve it by RDMA (cannot register it, ...): another transport may. */
        REFUSED,
        /**
         * The fetch itself failed: a broken connection, a timeout (including a read that waited longer
         * than the fetch timeout for a fetch buffer), a failed read, a malformed answer.
         */
        FAILED
    }

    private final String peer;
    private final Kind kind;
    private final transient List<BlockId> blocks;

    public BlockFetchException(String peer, List<BlockId> blocks, Kind kind, String reason, Throwable cause) {
        super("fetching " + describe(blocks) + " from " + peer + " failed: " + reason, cause);
        this.peer = peer;
        this.kind = kind;
        this.blocks = List.copyOf(blocks);
    }

    public Kind kind() {
        return kind;
    }

    /** The kind of {@code t} if it is a fetch failure, else {@link Kind#FAILED}. */
    public static Kind kindOf(Throwable t) {
        return t instanceof BlockFetchException e ? e.kind : Kind.FAILED;
    }

    public String peer() {
        return peer;
    }

    public List<BlockId> blocks() {
        return blocks;
    }

    private static String describe(List<BlockId> blocks) {
        if (blocks.size() <= 4) {
            return blocks.toString();
        }
        return blocks.size() + " blocks " + blocks.subList(0, 3) + " ...";
    }
}
