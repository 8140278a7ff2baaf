package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.rdmashuffle.core.protocol.BlockId;

/** Tells listeners what became of their blocks, with no lock held; a listener that throws costs only its own call. */
final class Outcomes {
    private static final System.Logger LOG = System.getLogger(PeerFetcher.class.getName());

    private Outcomes() {
    }

    static void deliver(Wanted w, FetchedBlock block) {
        try {
            w.listener.onBlockFetched(block);
        } catch (RuntimeException e) {
            block.release(); // it never took the block
            LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on " + w.id + "; block released", e);
        }
    }

    /** Tells each listener which of its blocks failed, in one exception per listener. */
    static void failed(String peer, List<Wanted> blocks, BlockFetchException.Kind kind, String reason, Throwable cause) {
        Map<BlockFetchListener, List<Wanted>> byListener = new LinkedHashMap<>();
        for (Wanted w : blocks) {
            byListener.computeIfAbsent(w.listener, k -> new ArrayList<>()).add(w);
        }
        for (Map.Entry<BlockFetchListener, List<Wanted>> e : byListener.entrySet()) {
            List<BlockId> ids = new ArrayList<>(e.getValue().size());
            for (Wanted w : e.getValue()) {
                ids.add(w.id);
            }
            BlockFetchException failure = new BlockFetchException(peer, ids, kind, reason, cause);
            for (Wanted w : e.getValue()) {
                failed(w, failure);
            }
        }
    }

    static void failed(Wanted w, BlockFetchException failure) {
        try {
            w.listener.onBlockFetchFailure(w.id, failure);
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.WARNING, "block fetch listener failed on the failure of " + w.id, ex);
        }
    }
}
