package org.rdmashuffle.core.transport;

import java.util.List;

import org.rdmashuffle.core.config.EngineConfig;
import org.rdmashuffle.verbs.Access;
import org.rdmashuffle.verbs.ConnectOptions;
import org.rdmashuffle.verbs.DeviceAttributes;
import org.rdmashuffle.verbs.GidChoice;
import org.rdmashuffle.verbs.Mtu;
import org.rdmashuffle.verbs.PortAttributes;
import org.rdmashuffle.verbs.VerbsContext;
import org.rdmashuffle.verbs.VerbsDevice;
import org.rdmashuffle.verbs.VerbsProvider;

/** Opening the device and deriving how queue pairs connect on it: port, GID, MTU, outstanding reads. */
public final class DeviceSetup {
    private DeviceSetup() {
    }

    /**
     * Opens the provider's device {@code name}; with none named, the one whose GID table carries
     * {@code bindAddress} (the address peers reach this host at), else the first. Names the devices
     * there are if none matches.
     */
    public static VerbsContext open(VerbsProvider provider, String name, String bindAddress) {
        List<VerbsDevice> devices = provider.devices();
        String wanted = name != null ? name : GidChoice.deviceCarrying(provider, address(bindAddress));
        for (VerbsDevice d : devices) {
            if (wanted == null || d.name().equals(wanted)) {
                return d.open();
            }
        }
        throw new IllegalStateException(provider.name() + " has no device " + (name == null ? "at all" : name)
                + " (devices: " + devices.stream().map(VerbsDevice::name).toList() + ")");
    }

    /** The GID queue pairs use: {@code gidIndex} if set (checked), else chosen for {@code bindAddress}. */
    public static GidChoice gid(EngineConfig config, VerbsContext ctx, PortAttributes port) {
        return config.gidIndex() >= 0 ? GidChoice.explicit(ctx, port, config.gidIndex())
                : GidChoice.choose(ctx, port, address(config.bindAddress()));
    }

    private static java.net.InetAddress address(String host) {
        try {
            return java.net.InetAddress.getByName(host);
        } catch (java.net.UnknownHostException e) {
            return null; // the control server names it when it cannot listen there
        }
    }

    /** Port, GID and MTU of this device, and as many outstanding reads as the device allows (like perftest). */
    public static ConnectOptions connectOptions(EngineConfig config, DeviceAttributes device, PortAttributes port,
                                                GidChoice gid, int minRnrTimer) {
        Mtu mtu = port.activeMtu() == null ? Mtu.MTU_1024 : Mtu.min(Mtu.MTU_4096, port.activeMtu());
        int initiator = device.maxQpInitRdAtomic() > 0 ? device.maxQpInitRdAtomic() : 16;
        int responder = device.maxQpRdAtomic() > 0 ? device.maxQpRdAtomic() : 16;
        ConnectOptions d = ConnectOptions.defaults(config.port(), gid.index(), mtu);
        return new ConnectOptions(d.portNumber(), d.gidIndex(), d.mtu(), Access.REMOTE_READ, Math.min(initiator, 255),
                Math.min(responder, 255), minRnrTimer, d.timeout(), d.retryCount(), 7);
    }
}
