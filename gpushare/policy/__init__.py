"""The product's rules as data, one engine, and the commands that report on them."""
