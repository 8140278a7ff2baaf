package org.rdmashuffle.core.server;

import java.util.function.Predicate;

import org.rdmashuffle.core.control.ControlServer;
import org.rdmashuffle.core.control.ServerBusyException;

/**
 * Who may keep an authenticated control connection to a serving engine: not an application that
 * stopped (told so), and no more than the bounds on control connections per application, per user
 * and per node ({@link ServiceUsage}); beyond those a peer is told "busy" and asks again later, as
 * after any busy reply.
 */
public final class ControlAdmission implements ControlServer.Admission {
    private static final System.Logger LOG = System.getLogger(ControlAdmission.class.getName());

    /** A tenant chooses how many of its connections are refused: logged once a minute, with a count. */
    private final org.rdmashuffle.verbs.util.RepeatedWarning refusals =
            new org.rdmashuffle.verbs.util.RepeatedWarning(LOG, 60, java.util.concurrent.TimeUnit.SECONDS);
    private final Predicate<String> stopped;
    private final ServiceUsage usage;

    /** @param stopped whether an application has stopped on this engine */
    public ControlAdmission(Predicate<String> stopped, ServiceUsage usage) {
        this.stopped = stopped;
        this.usage = usage;
    }

    @Override
    public String admit(String app) {
        if (stopped.test(app)) {
            return "application " + app + " has stopped";
        }
        String full = usage.tryAdd(ServiceUsage.Kind.CONTROL, app);
        if (full != null) {
            refusals.warn("rdma-shuffle: a control connection of " + app + " refused: " + full);
            return ServerBusyException.MESSAGE;
        }
        return null;
    }

    @Override
    public void leave(String app) {
        usage.remove(ServiceUsage.Kind.CONTROL, app);
    }
}
