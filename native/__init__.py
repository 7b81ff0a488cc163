"""C helpers shared by the project's parts: the build cache that compiles C at run time (``build``)."""
