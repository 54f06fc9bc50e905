import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import org.neo4j.cli.AdminTool;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.BoltConnectorInternalSettings;
import org.neo4j.configuration.connectors.ConnectorPortRegister;
import org.neo4j.configuration.connectors.ConnectorType;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.fs.DefaultFileSystemAbstraction;
import org.neo4j.kernel.internal.GraphDatabaseAPI;

/**
 * The Neo4j server of Strata's test suite: Neo4j Community, embedded, with Bolt on a loopback
 * port and authentication on (no HTTP). Used by tests/support/neo4j_server.py.
 *
 * <pre>java -jar build/jvm/neo4j/strata-test-neo4j.jar HOME [PORT]</pre> (the jar's manifest names the jars of lib/)
 *
 * HOME is the server's folder (databases, transaction logs, logs); PORT defaults to 0, any free
 * port. The password of user neo4j is read from $STRATA_TEST_NEO4J_PASSWORD, the page cache size
 * in MiB from $STRATA_TEST_NEO4J_PAGECACHE_MB (default 64). Once the server
 * accepts Bolt connections it prints one line, {@code bolt://127.0.0.1:PORT}, to stdout. It stops
 * (and flushes its databases) when stdin reaches end of file or on SIGTERM/SIGINT.
 */
public final class StrataTestNeo4j {
    private StrataTestNeo4j() {}

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable e) { // Neo4j's threads would keep a failed JVM alive: stop it
            e.printStackTrace();
            System.err.println("error: the Neo4j test server did not start: " + e);
            Runtime.getRuntime().halt(1);
        }
    }

    private static void run(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: StrataTestNeo4j HOME [PORT]");
            System.exit(2);
        }
        String password = System.getenv("STRATA_TEST_NEO4J_PASSWORD");
        if (password == null || password.length() < 8) {
            System.err.println("error: $STRATA_TEST_NEO4J_PASSWORD must hold a password of 8 or more characters");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int port = args.length > 1 ? Integer.parseInt(args[1]) : 0;
        String pagecache = System.getenv().getOrDefault("STRATA_TEST_NEO4J_PAGECACHE_MB", "64");

        setInitialPassword(home, password);
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(Map.ofEntries(
                        Map.entry(BoltConnector.enabled, true),
                        Map.entry(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port)),
                        Map.entry(BoltConnector.encryption_level, BoltConnector.EncryptionLevel.DISABLED),
                        Map.entry(HttpConnector.enabled, false),
                        Map.entry(GraphDatabaseSettings.auth_enabled, true),
                        Map.entry(GraphDatabaseSettings.pagecache_memory, Long.parseLong(pagecache) << 20),
                        Map.entry(GraphDatabaseSettings.preallocate_logical_logs, false),
                        Map.entry(GraphDatabaseSettings.log_queries, GraphDatabaseSettings.LogQueryLevel.OFF),
                        Map.entry(GraphDatabaseSettings.udc_enabled, false),
                        // stop within a second: no quiet period for Bolt's Netty threads
                        Map.entry(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 0),
                        Map.entry(GraphDatabaseInternalSettings.netty_server_shutdown_timeout, Duration.ofSeconds(1)),
                        Map.entry(BoltConnectorInternalSettings.thread_pool_shutdown_wait_time, Duration.ofSeconds(1)),
                        Map.entry(BoltConnectorInternalSettings.connection_shutdown_wait_time, Duration.ofSeconds(1))))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(dbms::shutdown, "strata-neo4j-shutdown"));


        GraphDatabaseAPI db = (GraphDatabaseAPI) dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        var bolt = db.getDependencyResolver().resolveDependency(ConnectorPortRegister.class)
                .getLocalAddress(ConnectorType.BOLT);
        System.out.println("bolt://127.0.0.1:" + bolt.getPort());
        System.out.flush();

        waitForEndOfInput(System.in);
        System.exit(0); // runs the shutdown hook
    }

    /**
     * The neo4j user starts with password "neo4j", to be changed at first login. Before the first
     * start of a HOME, {@code neo4j-admin dbms set-initial-password} (run here in-process) gives it
     * ours instead; a HOME that has started before keeps the password it has.
     */
    private static void setInitialPassword(Path home, String password) {
        if (Files.isDirectory(home.resolve("data/databases/system"))) {
            return;
        }
        ExecutionContext context = new ExecutionContext(home, home.resolve("conf"), new PrintStream(
                OutputStream.nullOutputStream()), System.err, new DefaultFileSystemAbstraction());
        int status = AdminTool.execute(context, "dbms", "set-initial-password", password);
        if (status != 0) {
            throw new IllegalStateException("neo4j-admin dbms set-initial-password exited with " + status);
        }
    }

    private static void waitForEndOfInput(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // only the end of input matters
            }
        } catch (IOException e) {
            // a closed stdin also means stop
        }
    }
}
