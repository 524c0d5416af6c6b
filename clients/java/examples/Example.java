// clients/java/examples/Example.java
import io.github.snowfence.client.Schedule;
import io.github.snowfence.client.SnowfenceClient;

public class Example {
    public static void main(String[] args) {
        String url = System.getenv().getOrDefault("SNOWFENCE_URL", "http://127.0.0.1:8080");
        try (SnowfenceClient ids = SnowfenceClient.builder().endpoints(url).build()) {
            long first = ids.next();
            System.out.println(first);
            System.out.println(ids.next());
            System.out.println(ids.next());
            System.out.println(Schedule.parse("v1").decode(first).toJson());
        }
    }
}
