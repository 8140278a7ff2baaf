package org.rdmashuffle.core.server;

import java.util.HashSet;
import java.util.Set;

/**
 * The outputs one answer in the making holds for its connection ({@link ConnectionHolds}): each once,
 * however many of its blocks they hold, as the reducer releases each once per answer. If the answer is
 * not sent as a held answer (a refusal, "busy", the connection gone), they are given back
 * ({@link MapOutputRegistry#giveBack}). Touched by one thread at a time: whichever takes the request's
 * turn, under the registry's lock.
 */
public final class HeldAnswer {
    final ConnectionHolds connection;
    final Set<MapOutput> outputs = new HashSet<>();

    public HeldAnswer(ConnectionHolds connection) {
        this.connection = connection;
    }
}
