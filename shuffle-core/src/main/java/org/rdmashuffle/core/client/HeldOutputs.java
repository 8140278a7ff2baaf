package org.rdmashuffle.core.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.rdmashuffle.core.protocol.Message;

/**
 * The outputs a {@link PeerFetcher}'s peer described in held answers ({@link Message.FetchResponse#held}:
 * the peer keeps them registered for this connection until released, instead of for a lease), and the
 * releases owed for them. Per output: how many held answers described it and are not released yet, and
 * how many of its reads (whole blocks, pieces, and large blocks with pieces still to come) are queued,
 * posted or parked. Once none is, its answers are owed back; the fetcher sends what is owed in
 * {@link Message.Release}s of at most {@link #MAX_PER_MESSAGE} outputs ({@link #take}). A read ends
 * once ({@link #end}): it completed, or left the queue unposted. Dropped when the fetcher fails: the
 * peer gives back what the connection held itself. Not thread-safe: its fetcher's lock.
 */
final class HeldOutputs {
    /** Outputs in one Release: 40 of at most 20 bytes each fit the smallest receive buffer (1 KiB). */
    static final int MAX_PER_MESSAGE = 40;

    /** One output held for this connection. */
    static final class Output {
        private final HeldOutputs owner;
        private final OutputKey key;
        private int answers;
        private int reading;

        private Output(HeldOutputs owner, OutputKey key) {
            this.owner = owner;
            this.key = key;
        }

        /** One more read (or large block) of it is under way. */
        void start() {
            reading++;
        }

        /** One read (or large block) of it is over; the last owes its answers back. */
        void end() {
            if (--reading == 0) {
                owner.settle(this);
            }
        }
    }

    private final Map<OutputKey, Output> outputs = new HashMap<>();
    private final OutputKey probe = new OutputKey(0, 0);
    private final List<Message.Released> owed = new ArrayList<>();

    /** A held answer described (a non-empty block of) this output: one more answer to release. */
    Output described(int shuffleId, long mapId) {
        Output o = outputs.get(probe.of(shuffleId, mapId));
        if (o == null) {
            OutputKey key = new OutputKey(shuffleId, mapId);
            o = new Output(this, key);
            outputs.put(key, o);
        }
        o.answers++;
        return o;
    }

    /** Once an answer's reads are queued: an output none of them reads (each failed alone) is owed back now. */
    void settle(Output o) {
        if (o.reading == 0 && outputs.get(o.key) == o) {
            outputs.remove(o.key);
            owed.add(new Message.Released(o.key.shuffleId, o.key.mapId, o.answers));
        }
    }

    /** {@code r} is over (completed, or out of the queue unposted); a read of no held answer, or one ended before, is nothing. */
    static void end(Read r) {
        Output o = r.hold;
        if (o != null) {
            r.hold = null;
            o.end();
        }
    }

    /** The large block {@code p} has no piece left to read (landed, failed or closed); its pieces end on their own. */
    static void end(PiecedBlock p) {
        Output o = p.hold;
        if (o != null) {
            p.hold = null;
            o.end();
        }
    }

    /** Outputs owed back and not yet sent. */
    int owed() {
        return owed.size();
    }

    /** Outputs held now (reads of them under way). */
    int held() {
        return outputs.size();
    }

    /** What is owed, as messages to send, and nothing owed from now on. */
    List<Message.Release> take() {
        if (owed.isEmpty()) {
            return List.of();
        }
        List<Message.Release> out = new ArrayList<>((owed.size() + MAX_PER_MESSAGE - 1) / MAX_PER_MESSAGE);
        for (int i = 0; i < owed.size(); i += MAX_PER_MESSAGE) {
            out.add(new Message.Release(owed.subList(i, Math.min(owed.size(), i + MAX_PER_MESSAGE))));
        }
        owed.clear();
        return out;
    }

    /** The connection failed: the peer drops what it held for it; nothing is owed. */
    void clear() {
        outputs.clear();
        owed.clear();
    }
}
