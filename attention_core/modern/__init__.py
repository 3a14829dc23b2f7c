"""Modern attention on small numbers: grouped-query and multi-query attention (and, later, RoPE, ALiBi, ...)."""
