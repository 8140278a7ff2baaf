package org.rdmashuffle.verbs.software;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A software device dials its links from its own address, as its engine opens its control connections
 * from it: the peer counts the link's handshakes under that address, not under whichever address the
 * kernel would pick (on loopback, 127.0.0.1 for every device of the host).
 */
class LinkSourceAddressTest {

    @Test
    void aDeviceOnAnotherLoopbackAddress_dialsFromThatAddress() throws Exception {
        InetAddress own = InetAddress.getByName("127.1.0.9");
        try (ServerSocket peer = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
             SoftwareProvider provider = new SoftwareProvider(new SoftwareProvider.Config(own, 0,
                     SoftwareProvider.Config.loopback().admission()))) {
            CompletableFuture<InetAddress> seenFrom = CompletableFuture.supplyAsync(() -> {
                try (Socket s = peer.accept()) {
                    new DataInputStream(s.getInputStream()).readInt(); // the hello
                    new DataOutputStream(s.getOutputStream()).writeInt(0);
                    return s.getInetAddress();
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            SoftDevice device = (SoftDevice) provider.devices().getFirst();
            PeerLink link = PeerLink.dial(device, new InetSocketAddress(InetAddress.getLoopbackAddress(), peer.getLocalPort()));
            try {
                assertEquals(own, seenFrom.get(10, TimeUnit.SECONDS), "the address the peer saw the link come from");
            } finally {
                link.close(new IOException("test over"));
            }
        }
    }
}
