"""softswitch frontend: preprocessor, lexer, parser, AST, types; P4Error."""

from .errors import P4Error, Pos

__all__ = ["P4Error", "Pos"]
