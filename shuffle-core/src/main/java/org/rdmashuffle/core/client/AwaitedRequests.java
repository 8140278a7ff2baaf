package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.rdmashuffle.core.protocol.BlockId;
import org.rdmashuffle.core.protocol.Message;

/**
 * The FetchRequests a fetcher sent and awaits answers to, by request id, with what each asked for.
 * Decides which layouts a request asks for: only for outputs with none held and none on the way
 * (each is worth sending once), only as many as an answer of that shuffle holds ({@link
 * LayoutsAsked#room}) and the cache has room for beside the shuffle's own ({@link LayoutCache#room})
 * -- the blocks of those outputs fetched meanwhile wait for them. Not thread-safe: its fetcher's lock.
 */
final class AwaitedRequests {
    /** A FetchRequest awaiting its answer: for blocks to read, or to describe a pieced block again. */
    record Request(List<Wanted> blocks, long sentAt, PiecedBlock refreshing, boolean withLayouts) {
    }

    private final Map<Long, Request> awaiting = new HashMap<>();

    /** Records request {@code id} for {@code batch} (blocks of one shuffle) and returns the message to send. */
    Message.FetchRequest add(long id, List<Wanted> batch, PiecedBlock refreshing, LayoutCache layouts, LayoutsAsked asked,
                             long now) {
        boolean withLayouts = false;
        int shuffle = batch.getFirst().id.shuffleId();
        int room = refreshing == null ? asked.room(shuffle) : 0;
        // Only as many as the cache can keep, counting those on the way: a layout it cannot keep is
        // bytes encoded, sent and decoded for nothing (the blocks waiting for it are asked for after).
        long perLayout = Math.max(1, layouts.costPerLayout(shuffle));
        long free = room == 0 ? 0 : layouts.room(shuffle) - asked.onTheWayCount() * perLayout;
        for (int i = 0, marked = 0; i < batch.size() && marked < room && free >= perLayout; i++) {
            BlockId b = batch.get(i).id;
            if (!layouts.has(b.shuffleId(), b.mapId()) && !asked.onTheWay(b.shuffleId(), b.mapId(), now)) {
                asked.asking(b.shuffleId(), b.mapId(), now);
                withLayouts = true;
                marked++;
                free -= perLayout;
            }
        }
        awaiting.put(id, new Request(batch, now, refreshing, withLayouts));
        List<BlockId> ids = new ArrayList<>(batch.size());
        for (Wanted w : batch) {
            ids.add(w.id);
        }
        return new Message.FetchRequest(id, batch.getFirst().id.shuffleId(), ids, withLayouts);
    }

    /** The request an answer names, no longer awaited; null if it is not awaited. */
    Request take(long id) {
        return awaiting.remove(id);
    }

    /** The request {@code id} names, still awaited; null if it is not. */
    Request peek(long id) {
        return awaiting.get(id);
    }

    /** Awaited again: an answer that broke the connection leaves its blocks to fail with it. */
    void putBack(long id, Request r) {
        awaiting.put(id, r);
    }

    boolean anyOlderThan(long now, long timeoutNanos) {
        for (Request r : awaiting.values()) {
            if (now - r.sentAt() > timeoutNanos) {
                return true;
            }
        }
        return false;
    }

    boolean isEmpty() {
        return awaiting.isEmpty();
    }

    int size() {
        return awaiting.size();
    }

    /** Every request, none awaited after: the connection failed. */
    List<Request> drain() {
        List<Request> all = new ArrayList<>(awaiting.values());
        awaiting.clear();
        return all;
    }
}
