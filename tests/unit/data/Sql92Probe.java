import java.io.*;
import java.util.*;
import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.*;

public class Sql92Probe {
    // stdin: lines "C\t<sql>" (compile) or "E\t<sql>\t<k=v;k=v>" ; prints JSON-ish lines
    public static void main(String[] a) throws Exception {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = r.readLine()) != null) {
            String[] p = line.split("\t", -1);
            String sql = p[1].replace("\\n", "\n");
            try {
                Expression e = FilterFactory.INSTANCE.get("SQL92").compile(sql);
                if (p[0].equals("C")) { System.out.println("OK"); continue; }
                Map<String, String> props = new HashMap<>();
                if (!p[2].isEmpty()) for (String kv : p[2].split(";")) { String[] x = kv.split("=", 2); props.put(x[0], x[1]); }
                Object ret;
                try {
                    ret = e.evaluate(new EvaluationContext() {
                        public Object get(String n) { return props.get(n); }
                        public Map<String, Object> keyValues() { return null; }
                    });
                    System.out.println(ret == null ? "null" : ret.getClass().getSimpleName() + ":" + ret);
                } catch (Throwable t) { System.out.println("THROW"); }
            } catch (Exception ex) {
                System.out.println("ERR " + ex.getMessage().replace("\\", "\\\\").replace("\n", "\\n"));
            }
        }
    }
}
