package org.rdmashuffle.core.client;

import java.io.IOException;
import java.util.List;

import org.rdmashuffle.core.BlockId;

/** Blocks could not be fetched from a peer; the message names the peer, the blocks and the cause. */
public final class BlockFetchException extends IOException {
    private static final long serialVersionUID = 1L;
    private final String peer;
    private final transient List<BlockId> blocks;

    public BlockFetchException(String peer, List<BlockId> blocks, String reason, Throwable cause) {
        super("fetching " + describe(blocks) + " from " + peer + " failed: " + reason, cause);
        this.peer = peer;
        this.blocks = List.copyOf(blocks);
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
