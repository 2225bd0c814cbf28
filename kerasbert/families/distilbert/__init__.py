"""The distilbert family."""
