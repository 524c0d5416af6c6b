package io.github.snowfence.client;

import java.util.ResourceBundle;
import java.util.function.Supplier;

/** A logger that drops everything: the tests' failures are expected ones. */
final class QuietLogger implements System.Logger {
    static final QuietLogger INSTANCE = new QuietLogger();

    @Override
    public String getName() {
        return "quiet";
    }

    @Override
    public boolean isLoggable(Level level) {
        return false;
    }

    @Override
    public void log(Level level, Supplier<String> msg) {
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
    }
}
