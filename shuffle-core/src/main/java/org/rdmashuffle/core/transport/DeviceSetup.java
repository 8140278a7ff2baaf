package org.rdmashuffle.core.transport;

import java.util.List;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidEntry;
import org.rdmashuffle.verbs.GidType;
import org.rdmashuffle.verbs.LinkLayer;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;

/** Opening the device and deriving how queue pairs connect on it: port, GID, MTU, outstanding reads. */
public final class DeviceSetup {
    private DeviceSetup() {
    }

    /** Opens the provider's device {@code name} (null: the first), naming the devices there are if none matches. */
    public static VerbsContext open(VerbsProvider provider, String name) {
        List<VerbsDevice> devices = provider.devices();
        for (VerbsDevice d : devices) {
            if (name == null || d.name().equals(name)) {
                return d.open();
            }
        }
        throw new IllegalStateException(provider.name() + " has no device " + (name == null ? "at all" : name)
                + " (devices: " + devices.stream().map(VerbsDevice::name).toList() + ")");
    }

    /** Port, GID and MTU of this device, and as many outstanding reads as the device allows (like perftest). */
    public static ConnectOptions connectOptions(EngineConfig config, VerbsContext ctx, DeviceAttributes device,
                                                PortAttributes port, int minRnrTimer) {
        int gid = config.gidIndex() >= 0 ? config.gidIndex() : chooseGid(ctx, port);
        Mtu mtu = port.activeMtu() == null ? Mtu.MTU_1024 : Mtu.min(Mtu.MTU_4096, port.activeMtu());
        int initiator = device.maxQpInitRdAtomic() > 0 ? device.maxQpInitRdAtomic() : 16;
        int responder = device.maxQpRdAtomic() > 0 ? device.maxQpRdAtomic() : 16;
        ConnectOptions d = ConnectOptions.defaults(config.port(), gid, mtu);
        return new ConnectOptions(d.portNumber(), d.gidIndex(), d.mtu(), Access.REMOTE_READ, Math.min(initiator, 255),
                Math.min(responder, 255), minRnrTimer, d.timeout(), d.retryCount(), 7);
    }

    /** A RoCE v2 IPv4 GID if there is one (what rxe and most RoCE fabrics route), else the first; LID on InfiniBand. */
    public static int chooseGid(VerbsContext ctx, PortAttributes port) {
        if (port.linkLayer() == LinkLayer.INFINIBAND) {
            return -1;
        }
        int fallback = -1;
        for (int i = 0; i < port.gidTableLength(); i++) {
            GidEntry e = ctx.queryGid(port.portNumber(), i);
            if (e == null || e.gid().isZero()) {
                continue;
            }
            if (e.type() == GidType.ROCE_V2 && e.gid().isIpv4Mapped()) {
                return i;
            }
            if (fallback < 0) {
                fallback = i;
            }
        }
        return Math.max(fallback, 0);
    }

    /**
     * The software provider's data listener address (its port's IPv4 GID), where peers dial our queue
     * pairs; null on a device (its GID is not an address we connect from). Control connections come
     * from it, because a software-provider server dials back only where the control connection comes from.
     */
    public static java.net.InetAddress softwareDataAddress(VerbsProvider provider, VerbsContext ctx, ConnectOptions options) {
        if (!org.rdmashuffle.verbs.software.SoftwareProvider.NAME.equals(provider.name())) {
            return null;
        }
        GidEntry e = ctx.queryGid(options.portNumber(), Math.max(0, options.gidIndex()));
        return e == null ? null : e.gid().ipv4Address();
    }
}
