"""The one error a compile raises."""

from __future__ import annotations


class CompileError(Exception):
    """The expression does not compile; ``remark`` is what Apache's broker answers for it
    (``MQFilterException.getMessage()``, i.e. the Java exception behind it, class name first)."""

    def __init__(self, remark: str) -> None:
        super().__init__(remark)
        self.remark = remark
