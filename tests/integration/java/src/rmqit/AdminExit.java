package rmqit;

import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Apache's mqadmin, unchanged, in a JVM that ends when the command returns.
 *
 * <p>{@code MQAdminStartup.main} returns after the command has shut its client down, but the JVM then
 * waits for the client's Netty event loops, whose graceful shutdown keeps them alive through a two-second
 * quiet period. Every mqadmin call of the suite paid those two idle seconds (about half its run). Nothing
 * is left to do once main returns: the output is flushed and the JVM exits with status 0, the status
 * mqadmin itself ends with when main returns; the paths where mqadmin calls {@code System.exit} itself
 * (help, unparsable options) keep their own status.
 */
public final class AdminExit {
    private AdminExit() {
    }

    public static void main(String[] args) {
        MQAdminStartup.main(args);
        System.out.flush();
        System.err.flush();
        System.exit(0);
    }
}
